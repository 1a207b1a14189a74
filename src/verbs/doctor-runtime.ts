// The core modules `grex doctor` needs for its checks and repairs, loaded when
// doctor runs (not when the verb table loads), as one object of named picks.

/** What the checks and repairs need, loaded when doctor runs (not when the verb table loads). */
export async function doctorRuntime() {
  const [backend, gitignore, packIgnore, rust, installState, trash, graph, journal, refs] = await Promise.all([
    import("../core/git/backend.ts"),
    import("../core/workspace/gitignore.ts"),
    import("../core/pack/x-gitignore.ts"),
    import("../core/compat/convert-rust.ts"),
    import("../core/sync/install-state.ts"),
    import("../core/workspace/trash.ts"),
    import("./doctor-graph.ts"),
    import("../core/git/worktree/checkout-journal.ts"),
    import("../core/git/refs/refs.ts"),
  ]);
  // Named picks, not spreads: two modules exporting one name must not silently shadow each other.
  return {
    isGitRepo: backend.isGitRepo,
    originUrlSync: backend.originUrlSync,
    blockIdsIn: gitignore.blockIdsIn,
    editIgnoreFile: gitignore.editIgnoreFile,
    parseBlocks: gitignore.parseBlocks,
    repairBlocks: gitignore.repairBlocks,
    updateIgnoreFile: gitignore.updateIgnoreFile,
    packIgnoreLines: packIgnore.packIgnoreLines,
    convertRustWorkspace: rust.convertRustWorkspace,
    describeRustShape: rust.describeRustShape,
    rustShape: rust.rustShape,
    interruptedPacks: installState.interruptedPacks,
    sweepTrash: trash.sweepTrash,
    trashDir: trash.trashDir,
    trashLeftovers: trash.trashLeftovers,
    graphProblems: graph.graphProblems,
    /** The commit a journaled work-tree move of the repository at `dir` was heading for, or null. */
    interruptedMove: (dir: string): string | null => {
      const gitdir = refs.gitdirOf(dir);
      return gitdir ? (journal.readJournal(gitdir)?.to ?? null) : null;
    },
  };
}
