// The OS names pack.yaml uses (`linux`, `macos`, `windows`).
export type OsName = "linux" | "macos" | "windows";

export function currentOs(): OsName {
  if (process.platform === "darwin") return "macos";
  if (process.platform === "win32") return "windows";
  return "linux";
}
