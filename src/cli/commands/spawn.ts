import path from 'node:path';
import { controlRequest } from '../../supervisor/control.ts';
import { AgentConfigSchema } from '../../config/schema.ts';
import { ensureAgent, requireHive } from '../../layout/ensure.ts';
import { isHiveError } from '../../errors.ts';
import { AGENT_TOKEN_ENV, agentToken } from '../../hooks/agent-token.ts';
import { JSON_OPTION, ROOT_OPTION, badArgs, rootOf, str, type Command } from '../args.ts';

export const spawnCommand: Command = {
  name: 'spawn',
  summary: 'add an agent to a hive (a running one starts it at once)',
  usage:
    'hive spawn --root DIR --id ID --brain echo|module|command|openai|external [--module FILE] [--command CMD] [--base-url URL --model M] [--name N] [--role R] [--brain-json JSON] [--json]',
  options: {
    ...ROOT_OPTION,
    ...JSON_OPTION,
    id: { type: 'string' },
    brain: { type: 'string' },
    module: { type: 'string' },
    command: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    name: { type: 'string' },
    role: { type: 'string' },
    'brain-json': { type: 'string' },
  },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    if (!str(args, 'id')) throw badArgs(this, 'missing --id');
    let brain: Record<string, unknown>;
    const json = str(args, 'brain-json');
    if (json !== undefined) {
      try {
        brain = JSON.parse(json);
      } catch (err) {
        throw badArgs(this, `--brain-json is not JSON: ${(err as Error).message}`);
      }
    } else {
      const kind = str(args, 'brain');
      if (!kind) throw badArgs(this, 'missing --brain (or --brain-json)');
      brain = { kind };
      if (str(args, 'module')) brain.module = path.resolve(io.cwd, str(args, 'module')!);
      if (str(args, 'command')) brain.command = str(args, 'command');
      if (str(args, 'base-url')) brain.baseURL = str(args, 'base-url');
      if (str(args, 'model')) brain.model = str(args, 'model');
    }
    const spec: Record<string, unknown> = { id: str(args, 'id'), brain };
    if (str(args, 'name')) spec.name = str(args, 'name');
    if (str(args, 'role')) spec.role = str(args, 'role');
    const parsed = AgentConfigSchema.safeParse(spec);
    if (!parsed.success) {
      throw badArgs(this, parsed.error.issues.map((i) => `${i.path.join('.') || 'spec'}: ${i.message}`).join('; '));
    }
    const asJson = args.values.json === true;
    let running = false;
    try {
      await controlRequest(root, { op: 'spawn', spec: parsed.data });
      if (!asJson) io.out(`spawned ${parsed.data.id} in the running hive\n`);
      running = true;
    } catch (err) {
      if (!isHiveError(err, 'E_NOT_FOUND')) throw err;
      const a = parsed.data;
      await ensureAgent(root, { id: a.id, name: a.name ?? a.id, role: a.role ?? 'agent', brain: a.brain }, 'runtime');
      if (!asJson) io.out(`registered ${a.id}; the hive is not running, it starts with the hive\n`);
    }
    // An agent run outside the hive needs its hooks token (agents Hive starts get theirs).
    const token = parsed.data.brain.kind === 'external' ? agentToken(root, parsed.data.id) : null;
    if (asJson) io.out(`${JSON.stringify({ id: parsed.data.id, running, ...(token ? { token } : {}) })}\n`);
    else if (token) io.out(`export ${AGENT_TOKEN_ENV}=${token}\n`);
    return 0;
  },
};
