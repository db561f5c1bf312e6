import { hivePaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';
import type { ClusterFile } from './cluster.ts';

/** This machine's `cluster.json` (null outside cluster mode, or before its router first ran). */
export function readClusterFile(root: string): ClusterFile | null {
  try {
    const data = readJsonFile<ClusterFile>(hivePaths(root).cluster);
    return data && typeof data.host === 'string' && Array.isArray(data.warnings) ? data : null;
  } catch {
    return null;
  }
}
