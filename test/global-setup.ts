import { bundleFixtures } from './helpers/fixture-bundles.ts';

/** Before the suite: the fixtures compiled (test/helpers/fixture-bundles.ts), so each process a test starts skips tsx's loader. */
export default async function setup(): Promise<void> {
  await bundleFixtures();
}
