/** Operator policy for PreToolUse: the first matching rule denies. Pure. */
export interface DenyRule {
  tool: string;
  match?: string | undefined;
  agents?: string[] | undefined;
  reason?: string | undefined;
}

export function evaluateToolPolicy(rules: DenyRule[], agentId: string, toolName: string, toolInput: unknown): { allow: boolean; reason: string } {
  const input = JSON.stringify(toolInput ?? null);
  for (const r of rules) {
    if (r.tool !== '*' && r.tool !== toolName) continue;
    if (r.agents && !r.agents.includes(agentId)) continue;
    if (r.match !== undefined && !new RegExp(r.match).test(input)) continue;
    return { allow: false, reason: r.reason ?? `Denied by hive policy: ${r.tool}${r.match ? ` matching /${r.match}/` : ''}` };
  }
  return { allow: true, reason: '' };
}
