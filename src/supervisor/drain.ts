/**
 * Waits for a worker to finish what it was asked to (its stop), at most `ms`: after that
 * the caller terminates it anyway. The timer is cleared when the work settles first, so a
 * script that closed its hive exits at once instead of when the longest grace runs out.
 */
export async function drainWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([work.then(() => undefined, () => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
