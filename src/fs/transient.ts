/**
 * Errors that say the machine is short of a resource for now, not that the data or the
 * code is wrong: a full disk or quota, too many open files, no memory for a buffer. An
 * actor that meets one pauses and retries the same step with backoff; it does not crash,
 * so it never counts toward restart intensity or poison (docs: README, "A hive that
 * nothing on its disk can stop").
 */
const TRANSIENT = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'ENOMEM']);

/** True for ENOSPC, EDQUOT, EMFILE, ENFILE and ENOMEM (also when wrapped as a `cause`). */
export function isTransientResourceError(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT.has(code)) return true;
  }
  return false;
}

/** What a paused actor's status says about the resource it waits for. */
export function describeShortage(err: unknown): string {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    switch ((e as { code?: unknown }).code) {
      case 'ENOSPC':
        return 'disk full';
      case 'EDQUOT':
        return 'disk quota exceeded';
      case 'EMFILE':
      case 'ENFILE':
        return 'too many open files';
      case 'ENOMEM':
        return 'out of memory';
      default:
        break;
    }
  }
  return 'a resource is short';
}
