/**
 * A machine's state, reported to the main thread at most every `everyMs` with the latest
 * value. A state that changes often (the router's routing → idle, once per pass) would
 * otherwise wake the main thread on every change; a change after a quiet while (a state
 * other than `quiet`) still goes at once.
 * @example const report = coalescedStateReport(100, 'idle', (v) => emit({ type: 'router.state', value: v }));
 */
export function coalescedStateReport(everyMs: number, quiet: string, send: (value: string) => void): (value: string) => void {
  let reported = '';
  let latest = '';
  let timer: NodeJS.Timeout | null = null;
  let at = 0;
  const flush = () => {
    timer = null;
    at = Date.now();
    if (latest === reported) return;
    reported = latest;
    send(latest);
  };
  return (value) => {
    latest = value;
    if (timer !== null) return;
    const wait = at + everyMs - Date.now();
    if (wait <= 0 && value !== quiet) return flush();
    timer = setTimeout(flush, Math.max(0, wait));
    timer.unref();
  };
}
