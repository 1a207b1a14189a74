// What the fixture MCP servers share: newline-delimited JSON-RPC from stdin,
// each message handed over as it arrives; resolves when stdin closes.
export async function readStdinMessages(handle: (message: Record<string, unknown>) => unknown): Promise<void> {
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of Bun.stdin.stream()) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl = buffer.indexOf("\n");
    while (nl >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line !== "") void handle(JSON.parse(line) as Record<string, unknown>);
      nl = buffer.indexOf("\n");
    }
  }
}
