import fs from 'node:fs';

/**
 * Permission bits of everything Hive creates in a hive. A hive holds conversations,
 * memories and secrets (hive.key), so by default only its owner can read it: folders
 * 0700, files 0600, flushed messages 0400 (no write bit: see FLUSHED in outbox.ts).
 * `permissions: 'group'` in the config shares it with the owner's group, read-only
 * (0750 / 0640 / 0440). Explicit modes, not the umask: the umask belongs to the process
 * Hive runs in, which may be someone else's program.
 *
 * The supervisor sets the hive root's own mode from the config; every other Hive process
 * (workers, `hive send`...) takes the sharing from the root's mode (`adoptModesOf`). The
 * setting is per process (per thread, in workers): two hives in one process with different
 * `permissions` would share the last one set.
 */

export interface HiveModes {
  dir: number;
  file: number;
  /** A message file its writer flushed: no write bits at all. */
  flushed: number;
}

export const OWNER_ONLY: HiveModes = Object.freeze({ dir: 0o700, file: 0o600, flushed: 0o400 });
export const GROUP_READ: HiveModes = Object.freeze({ dir: 0o750, file: 0o640, flushed: 0o440 });

let current: HiveModes = OWNER_ONLY;

/** The modes this process creates hive files with. */
export function hiveModes(): HiveModes {
  return current;
}

/** Shares what this process creates with the owner's group (read-only), or not. */
export function useGroupModes(group: boolean): void {
  current = group ? GROUP_READ : OWNER_ONLY;
}

/** True when a hive root is shared with its group: its group may enter it. A missing root is not. */
export function sharedWithGroup(root: string): boolean {
  try {
    return (fs.statSync(root).mode & 0o070) !== 0;
  } catch {
    return false; // not there yet: it will be made owner-only
  }
}

/** Takes the sharing from an existing hive root (see sharedWithGroup). */
export function adoptModesOf(root: string): void {
  useGroupModes(sharedWithGroup(root));
}

/**
 * Gives the hive root the mode this process uses (0700, or 0750 shared with the group): a
 * root made by an older version, or by hand, with 0755 would let every user of the machine
 * read the conversations. Returns the mode it had when it was changed, else null.
 */
export function secureHiveRoot(root: string): number | null {
  const have = fs.statSync(root).mode & 0o777;
  if (have === current.dir) return null;
  fs.chmodSync(root, current.dir);
  return have;
}

/** `mkdir -p` with the hive's folder mode; true when it made `dir` (it was not there). */
export function makeDir(dir: string): boolean {
  return fs.mkdirSync(dir, { recursive: true, mode: current.dir }) !== undefined;
}
