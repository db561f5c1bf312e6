import path from 'node:path';
import { loadConfig } from '../../config/load.ts';
import { createHive } from '../../hive.ts';
import type { Delivery } from '../../protocol/worker.ts';
import { JSON_OPTION, badArgs, int, str, type Command, type ParsedArgs } from '../args.ts';
import { PLANTS, type PlantName, type TestSeams } from '../../testing/seams.ts';
import { startInspector, type Inspector } from '../../inspector/server.ts';
import { painter } from '../colour.ts';
import { terminalLine } from '../terminal.ts';
import { readClusterFile } from '../../supervisor/cluster-file.ts';
import { ClusterSchema, type HiveConfig } from '../../config/schema.ts';

function clock(): string {
  return new Date().toISOString().slice(11, 23);
}

/** One line per delivered message: the exchange as it happens. */
export function formatDelivery(d: Delivery, paint: ReturnType<typeof painter> = painter(false)): string {
  const arrow = d.to === d.agent || d.to === 'human' || d.needs_human ? `${d.from} → ${d.agent}` : `${d.from} → ${d.agent} (${d.to})`;
  const ask = d.needs_human ? paint('yellow', '  [ASK ME]') : '';
  const text = terminalLine(`${d.subject ? `${d.subject}: ` : ''}${d.body}`.slice(0, 110));
  return `${paint('dim', clock())}  ${paint('cyan', terminalLine(arrow).padEnd(26))} ${d.act.padEnd(8)} ${text}${ask}\n`;
}

/** The test seams `hive chaos` starts its hive with (src/testing/seams.ts); none otherwise. */
function seamsOf(command: Command, args: ParsedArgs): TestSeams {
  const seams: TestSeams = {};
  const plant = str(args, 'test-plant');
  if (plant !== undefined) {
    if (!(PLANTS as readonly string[]).includes(plant)) throw badArgs(command, `expected --test-plant to be one of ${PLANTS.join(', ')}, got ${JSON.stringify(plant)}`);
    seams.plant = plant as PlantName;
  }
  if (str(args, 'test-fsync-delay-ms') !== undefined) seams.fsyncDelayMs = int(args, 'test-fsync-delay-ms', command, 0);
  if (args.values['test-fault-ops'] === true) seams.faultOps = true;
  return seams;
}

/**
 * `--cluster URL[,URL…]` runs this machine in cluster mode on those NATS servers (instead of
 * the config's `cluster.servers`; with a config that has no cluster section, `--host` names
 * the machine and the rest takes its defaults). `--host NAME` names this machine (instead
 * of the config's `cluster.host`).
 */
function withCluster(command: Command, config: HiveConfig, servers: string | undefined, host: string | undefined): HiveConfig {
  if (servers === undefined && host === undefined) return config;
  const where = config.configFile ?? 'the config';
  if (!config.cluster && servers === undefined) throw badArgs(command, `--host names this machine in cluster mode, but ${where} has no cluster section (add one, or name the NATS servers with --cluster)`);
  if (!config.cluster && host === undefined) throw badArgs(command, `--cluster runs this machine in cluster mode, but ${where} has no cluster section to name the machine: add --host NAME`);
  const input = {
    ...config.cluster,
    ...(servers !== undefined ? { servers: servers.split(',').map((s) => s.trim()).filter(Boolean) } : {}),
    ...(host !== undefined ? { host } : {}),
  };
  const parsed = ClusterSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path[0] === 'servers' ? '--cluster' : issue.path[0] === 'host' ? '--host' : `cluster.${issue.path.join('.')}`;
    const got = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey], input);
    const expected = field === '--cluster' ? 'NATS server URLs (nats://host:port or tls://host:port), comma-separated' : field === '--host' ? "a host name (lower-case letters, digits, '.', '_', '-')" : issue.message;
    throw badArgs(command, `expected ${field} to be ${expected}, got ${JSON.stringify(got ?? servers)}`);
  }
  return { ...config, cluster: parsed.data };
}

export const startCommand: Command = {
  name: 'start',
  summary: 'start the supervisor on a config file and run until Ctrl-C',
  usage: 'hive start [--config FILE] [--cluster URL[,URL]] [--host NAME] [--quiet] [--json]   (--cluster: run this machine in cluster mode on these NATS servers; --host: its name; hive chaos adds --test-fault-ops, --test-plant NAME, --test-fsync-delay-ms N)',
  options: { config: { type: 'string' }, cluster: { type: 'string' }, host: { type: 'string' }, quiet: { type: 'boolean' }, ...JSON_OPTION, 'test-plant': { type: 'string' }, 'test-fsync-delay-ms': { type: 'string' }, 'test-fault-ops': { type: 'boolean' } },
  async run(args, io) {
    const file = path.resolve(io.cwd, str(args, 'config') ?? 'hive.config.ts');
    const config = withCluster(this, await loadConfig(file), str(args, 'cluster'), str(args, 'host'));
    const hive = createHive(config, { testing: seamsOf(this, args) });
    const json = args.values.json === true;
    const quiet = args.values.quiet === true;
    /** --json: one JSON object a line for each event (tools and the chaos engine read them). */
    const emit = (event: string, data: object) => io.out(`${JSON.stringify({ event, at: new Date().toISOString(), ...data })}\n`);
    if (json) {
      if (!quiet) hive.on('starting', (e) => emit('starting', e));
      if (!quiet) hive.on('delivered', (d) => emit('delivered', d));
      hive.on('crashed', (c) => emit('crashed', c));
      hive.on('restarted', (r) => emit('restarted', r));
      hive.on('failed', (f) => emit('failed', f));
      hive.on('dead-lettered', (d) => emit('dead-lettered', d));
    } else if (!quiet) {
      // Never seconds of silence: what is starting, and how many agents are up.
      const paintErr = painter(io.colour?.err ?? false);
      const total = config.agents.filter((a) => a.brain.kind !== 'human' && a.brain.kind !== 'external').length;
      io.err(paintErr('dim', `hive: starting ${total} agent(s) from ${file}\n`));
      hive.on('starting', (e) => {
        if (e.phase === 'agents') io.err(paintErr('dim', `hive: ${e.done}/${e.total} agents up (${e.ms} ms)\n`));
        else if (e.phase === 'router') io.err(paintErr('dim', `hive: routing (${e.ms} ms)\n`));
      });
      const paint = painter(io.colour?.out ?? false);
      hive.on('delivered', (d) => io.out(formatDelivery(d, paint)));
      hive.on('crashed', (c) => io.err(paintErr('yellow', `${clock()}  crashed: ${c.host} (${terminalLine(c.error)}); restarting in ${c.delayMs} ms\n`)));
      hive.on('failed', (f) => io.err(paintErr('red', `${clock()}  FAILED: ${f.host} after ${f.restarts} restarts (${terminalLine(f.error)}); god is sent a notice\n`)));
      hive.on('dead-lettered', (d) => io.err(`${clock()}  dead-letter: ${terminalLine(d.source)}: ${terminalLine(d.error)}\n`));
    }
    await hive.start();
    let inspector: Inspector | null = null;
    if (config.inspector.enabled) {
      try {
        inspector = await startInspector(hive, { port: config.inspector.port });
      } catch (err) {
        await hive.close();
        throw err;
      }
    }
    // What this cluster setup cannot keep (a single NATS copy, a server that flushes periodically).
    const cluster = config.cluster ? readClusterFile(hive.root) : null;
    if (cluster && json) emit('cluster', { host: cluster.host, serverVersion: cluster.serverVersion, replicas: cluster.replicas, warnings: cluster.warnings });
    else if (cluster) for (const w of cluster.warnings) io.err(painter(io.colour?.err ?? false)('yellow', `hive: cluster warning: ${w}\n`));
    const agents = hive.supervisor.agentCount(); // status() reads every inbox: seconds at 10,000 agents
    const seen = inspector ? ` inspector=${inspector.url}` : '';
    if (json) emit('ready', { root: hive.root, agents, pid: process.pid, ...(inspector ? { inspector: inspector.url } : {}) });
    else io.out(`hive ready: root=${hive.root} agents=${agents} pid=${process.pid}${seen} (Ctrl-C to stop)\n`);
    await io.interrupted;
    if (json) emit('status', { actors: hive.status() });
    else io.err('hive: stopping...\n');
    await inspector?.close();
    await hive.close();
    if (json) emit('stopped', {});
    else io.err('hive: stopped\n');
    return 0;
  },
};
