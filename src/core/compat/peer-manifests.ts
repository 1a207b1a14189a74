// The lists other multi-repo tools keep, read into one shape so `grex import
// --from <file>` can register them: vcstool's `.repos`, west's `west.yml`,
// repo's manifest XML, gita's `repos.csv` and myrepos' `.mrconfig`. Groups
// become tags, revisions become pins, nested paths stay nested. Readers are
// pure: the verb gives them the text, a way to read an included file and a
// way to ask a local clone for its origin URL.
import type { PeerContext, PeerFormat, PeerImport } from "./peer-common.ts";

export { detectPeerFormat, PEER_FORMATS, type PeerContext, type PeerEntry, type PeerFormat, type PeerImport } from "./peer-common.ts";

export async function readPeerManifest(format: PeerFormat, ctx: PeerContext): Promise<PeerImport> {
  switch (format) {
    case "vcstool":
      return (await import("./peer-yaml.ts")).readVcstool(ctx);
    case "west":
      return (await import("./peer-yaml.ts")).readWest(ctx);
    case "repo":
      return (await import("./peer-repo.ts")).readRepoManifest(ctx);
    case "gita":
      return (await import("./peer-gita.ts")).readGita(ctx);
    case "mrconfig":
      return (await import("./peer-mrconfig.ts")).readMrconfig(ctx);
  }
}
