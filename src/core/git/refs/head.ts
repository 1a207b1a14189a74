// Where a work tree's HEAD is: a leaf type every backend, the ref readers
// and the checkout share.
export interface HeadInfo {
  sha: string;
  /** The checked-out branch, or null for a detached HEAD. */
  branch: string | null;
}
