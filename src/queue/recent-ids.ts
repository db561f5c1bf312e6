/**
 * Adds `id` to a deliverer's set of the ids it has delivered, which keeps the newest: once
 * the set holds more than twice `horizon` (+1,000, so the trim runs now and then, not at
 * every add), the oldest beyond twice `horizon` are let go. The duplicate check looks back
 * `horizon` entries (the filesystem's doneCap, JetStream's DEDUPE_HORIZON); a router that
 * delivers for weeks does not hold every id it ever saw.
 */
export function addRecent(ids: Set<string>, id: string, horizon: number): void {
  ids.add(id);
  if (ids.size <= horizon * 2 + 1_000) return;
  let drop = ids.size - horizon * 2;
  for (const old of ids) {
    if (drop-- <= 0) break;
    ids.delete(old);
  }
}
