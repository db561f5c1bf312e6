import path from 'node:path';
import { hivePaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';

/** Cluster mode: this machine, its NATS servers and what the setup can promise (written by its router at start). */
export function clusterFilePath(root: string): string {
  return path.join(hivePaths(root).root, 'cluster.json');
}

/** This machine's `cluster.json` (null outside cluster mode, or before its router first ran). */
export function readClusterFile(root: string): ClusterFile | null {
  try {
    const data = readJsonFile<ClusterFile>(clusterFilePath(root));
    return data && typeof data.host === 'string' && Array.isArray(data.warnings) ? data : null;
  } catch {
    return null;
  }
}

/** What `cluster.json` holds (written by the router of a cluster machine at start). */
export interface ClusterFile {
  host: string;
  servers: string[];
  prefix: string;
  local: string[];
  placement: Record<string, string>;
  serverVersion: string;
  replicas: number;
  survives: string[];
  warnings: string[];
  checked_at: string;
}
