import fs from 'node:fs';
import { hiveModes } from '../fs/modes.ts';

type MkdirCallback = (err: NodeJS.ErrnoException | null) => void;

/**
 * The lock folder's mkdir. Something that is not a folder at a lock's name (a file, a FIFO,
 * a symlink: the hive folder is shared) is no lock anyone holds, but proper-lockfile would
 * wait it out as one and then fail to remove it as stale (ENOTDIR: a file named
 * `registry.json.lock` stopped every registry update, so the start, after 10 s). It is
 * renamed aside to `<name>.not-a-folder-<time>-<pid>` and the folder made.
 */
function mkdirLock(dir: fs.PathLike, callback: MkdirCallback): void {
  const mode = hiveModes().dir;
  fs.mkdir(dir, { mode }, (err) => {
    if (err?.code !== 'EEXIST') return callback(err);
    fs.lstat(dir, (statErr, st) => {
      if (statErr || st.isDirectory()) return callback(err);
      fs.rename(dir, `${String(dir)}.not-a-folder-${Date.now()}-${process.pid}`, (renameErr) => {
        if (renameErr) return callback(err);
        fs.mkdir(dir, { mode }, callback);
      });
    });
  });
}

/**
 * The `fs` proper-lockfile works through: the same calls, but the lock folders it makes
 * get the hive's folder mode (src/fs/modes.ts) instead of 0777 minus the umask, and a
 * non-folder at a lock's name is moved aside (`mkdirLock`). Passed as the `fs` option of
 * every `lockfile.lock`.
 */
export const lockFs: typeof fs = {
  ...fs,
  mkdir: mkdirLock as typeof fs.mkdir,
};
