import fs from 'node:fs';
import path from 'node:path';

/**
 * The disk's raw durable-write rate: what one write + fsync + rename + directory
 * fsync costs, with nothing of Hive around it. Every queue figure is quoted as a
 * ratio to this, measured in the same run on the same folder.
 */
export function rawDurableWriteRate(dir: string, count: number, bytes = 400): { perSecond: number; latenciesMs: number[] } {
  fs.mkdirSync(dir, { recursive: true });
  const payload = 'x'.repeat(bytes);
  const latenciesMs: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const s = performance.now();
    const tmp = path.join(dir, `.raw-${i}`);
    const fd = fs.openSync(tmp, 'w');
    fs.writeFileSync(fd, payload);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(tmp, path.join(dir, `raw-${i}.json`));
    const dfd = fs.openSync(dir, 'r');
    fs.fsyncSync(dfd);
    fs.closeSync(dfd);
    latenciesMs.push(performance.now() - s);
  }
  const elapsed = performance.now() - t0;
  return { perSecond: (count / elapsed) * 1000, latenciesMs };
}
