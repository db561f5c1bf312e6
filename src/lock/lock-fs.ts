import fs from 'node:fs';
import { hiveModes } from '../fs/modes.ts';

/**
 * The `fs` proper-lockfile works through: the same calls, but the lock folders it makes
 * get the hive's folder mode (src/fs/modes.ts) instead of 0777 minus the umask. Passed as
 * the `fs` option of every `lockfile.lock`.
 */
export const lockFs: typeof fs = {
  ...fs,
  mkdir: ((dir: fs.PathLike, callback: (err: NodeJS.ErrnoException | null) => void) => fs.mkdir(dir, { mode: hiveModes().dir }, callback)) as typeof fs.mkdir,
};
