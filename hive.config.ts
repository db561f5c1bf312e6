// The bundled demo hive: `npm start` runs it. Offline, no API keys: every brain is a
// TypeScript module in scripts/demo/. A planner splits a task between a researcher and a
// writer; the writer, an XState machine of its own (ready → drafting → awaitingTone → done),
// asks the people a question (it lands at god as an ASK ME card) and takes a default after 20 s.
import { defineConfig } from 'hive-runtime';

export default defineConfig({
  root: './demo-hive',
  agents: [
    { id: 'planner', name: 'Planner', role: 'splits tasks and reports back', brain: { kind: 'module', module: './scripts/demo/planner.ts' } },
    { id: 'researcher', name: 'Researcher', role: 'finds facts', brain: { kind: 'module', module: './scripts/demo/researcher.ts' } },
    { id: 'writer', name: 'Writer', role: 'writes copy; asks people about tone', brain: { kind: 'machine', module: './scripts/demo/writer.ts' } },
    { id: 'echo', name: 'Echo', role: 'answers every request with its body', brain: { kind: 'echo' } },
  ],
  router: { pollMs: 2_000, hopCap: 12 },
  supervisor: { restart: { maxRestarts: 5, withinMs: 60_000, backoff: { initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 } } },
  kickoff: [
    {
      from: 'god',
      to: 'planner',
      act: 'request',
      subject: 'Launch plan',
      body: 'Plan the launch of Hive 1.0: durable queues, crash recovery and a live inspector.',
    },
  ],
});
