// Names of the action kinds and pack types grex knows. Plugins may register more;
// pack.yaml validation rejects anything not listed here (exit 8).

export const BUILTIN_ACTIONS = ["symlink", "env", "mkdir", "rmdir", "require", "when", "exec"] as const;
export const BUILTIN_PACK_TYPES = ["meta", "declarative", "scripted"] as const;

export type BuiltinAction = (typeof BUILTIN_ACTIONS)[number];
export type BuiltinPackType = (typeof BUILTIN_PACK_TYPES)[number];

const actionNames = new Set<string>(BUILTIN_ACTIONS);
const packTypeNames = new Set<string>(BUILTIN_PACK_TYPES);

export function registerActionName(name: string): void {
  actionNames.add(name);
}

export function registerPackTypeName(name: string): void {
  packTypeNames.add(name);
}

export const isKnownAction = (name: string): boolean => actionNames.has(name);
export const isKnownPackType = (name: string): boolean => packTypeNames.has(name);
export const knownPackTypes = (): string[] => [...packTypeNames];

const orList = (names: readonly string[]): string =>
  names.length < 2 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;

/** The pack types for a message: "meta, declarative or scripted". */
export const packTypeChoices = (): string => orList([...packTypeNames]);
/** The action kinds for a message: "symlink, env, mkdir, …". */
export const actionChoices = (): string => [...actionNames].join(", ");
