import type { MachineGraph } from './machine-graph.ts';
import { layoutOnThread } from './elk-thread.ts';

/**
 * Draws a machine graph as SVG: ELK (elkjs, run in Node, on a thread of its own:
 * elk-thread.ts) computes the layout, this file writes the markup. The same SVG serves
 * `hive diagram` and the inspector page, which highlights a state by its `data-state`
 * attribute. No browser, no network.
 */

interface ElkLabel {
  text: string;
  width: number;
  height: number;
  x?: number;
  y?: number;
}
interface ElkNode {
  id: string;
  width?: number;
  height?: number;
  x?: number;
  y?: number;
  labels?: ElkLabel[];
  children?: ElkNode[];
  edges?: ElkEdge[];
  layoutOptions?: Record<string, string>;
}
interface ElkEdge {
  id: string;
  sources: string[];
  targets: string[];
  labels?: ElkLabel[];
  sections?: { startPoint: { x: number; y: number }; endPoint: { x: number; y: number }; bendPoints?: { x: number; y: number }[] }[];
}
const CHAR = 7.2; // width of a 12px sans-serif character, roughly: there is no text metric in Node
const LABEL_CHAR = 6.2;

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function nodeSize(s: MachineGraph['states'][number]): { width: number; height: number } {
  if (s.type === 'any') return { width: 70, height: 28 };
  const text = Math.max(s.key.length * CHAR, s.invoke ? (s.invoke.length + 2) * LABEL_CHAR : 0);
  return { width: Math.round(text + 32), height: s.invoke ? 46 : 34 };
}

/**
 * Lays out and renders a machine graph. `idPrefix` keeps marker ids unique when
 * several diagrams share a page; `holdProcess: false` lets the process exit meanwhile
 * (a warm-up whose result only a running server would use).
 * @example const svg = await renderMachineSvg(machineGraph(MACHINES.agent));
 */
export async function renderMachineSvg(graph: MachineGraph, options: { idPrefix?: string; title?: string; holdProcess?: boolean } = {}): Promise<string> {
  const p = options.idPrefix ?? graph.id;
  const input: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '46',
      'elk.spacing.nodeNode': '36',
      'elk.spacing.edgeLabel': '4',
      'elk.edgeLabels.inline': 'false',
      'elk.layered.edgeLabels.sideSelection': 'ALWAYS_DOWN',
      'elk.padding': '[top=16,left=16,bottom=16,right=16]',
    },
    children: graph.states.map((s) => ({ id: s.key, ...nodeSize(s) })),
    edges: graph.transitions.map((t) => ({
      id: t.id,
      sources: [t.source],
      targets: [t.target],
      labels: [{ text: t.label, width: Math.round(t.label.length * LABEL_CHAR + 6), height: 14 }],
    })),
  };
  const laid = await layoutOnThread(input, { hold: options.holdProcess ?? true });
  const width = Math.ceil(laid.width ?? 400);
  const height = Math.ceil(laid.height ?? 300);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="hive-machine" data-machine="${escapeXml(graph.id)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif">`,
  );
  if (options.title) out.push(`<title>${escapeXml(options.title)}</title>`);
  out.push(
    `<defs><marker id="${p}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#667"/></marker></defs>`,
    `<style>.hive-machine .state rect{fill:#f7f8fb;stroke:#8a93a6;stroke-width:1.2}.hive-machine .state.final rect{stroke-width:3;stroke-dasharray:none}` +
      `.hive-machine .state.any rect{fill:#fff;stroke-dasharray:4 3}.hive-machine .state.active rect{fill:#ffe9a8;stroke:#d18f00;stroke-width:2.4}` +
      `.hive-machine .state text{font-size:12px;fill:#1d2330}.hive-machine .state .invoke{font-size:10.5px;fill:#5b6478}` +
      `.hive-machine .edge{fill:none;stroke:#8a93a6;stroke-width:1.1}.hive-machine .edge-label{font-size:10.5px;fill:#4b5366}` +
      `.hive-machine .initial{fill:#1d2330}</style>`,
  );
  out.push('<g class="edges">');
  for (const e of laid.edges ?? []) {
    const t = graph.transitions.find((x) => x.id === e.id)!;
    for (const s of e.sections ?? []) {
      const pts = [s.startPoint, ...(s.bendPoints ?? []), s.endPoint];
      const d = pts.map((pt, i) => `${i === 0 ? 'M' : 'L'}${pt.x.toFixed(1)},${pt.y.toFixed(1)}`).join(' ');
      out.push(`<path class="edge" data-source="${escapeXml(t.source)}" data-target="${escapeXml(t.target)}" d="${d}" marker-end="url(#${p}-arrow)"/>`);
    }
    for (const l of e.labels ?? []) {
      out.push(`<text class="edge-label" x="${((l.x ?? 0) + 3).toFixed(1)}" y="${((l.y ?? 0) + 11).toFixed(1)}">${escapeXml(l.text)}</text>`);
    }
  }
  out.push('</g><g class="states">');
  for (const n of laid.children ?? []) {
    const s = graph.states.find((x) => x.key === n.id)!;
    const x = n.x ?? 0;
    const y = n.y ?? 0;
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    const cls = `state ${s.type}${s.initial ? ' initial-state' : ''}`;
    out.push(`<g class="${cls}" data-state="${escapeXml(s.key)}" transform="translate(${x.toFixed(1)},${y.toFixed(1)})">`);
    out.push(`<rect width="${w}" height="${h}" rx="${s.type === 'any' ? 14 : 8}"/>`);
    if (s.initial) out.push(`<circle class="initial" cx="-7" cy="${(h / 2).toFixed(1)}" r="4"/>`);
    const label = s.type === 'any' ? 'any state' : s.key;
    out.push(`<text x="${(w / 2).toFixed(1)}" y="${s.invoke ? 19 : h / 2 + 4}" text-anchor="middle">${escapeXml(label)}</text>`);
    if (s.invoke) out.push(`<text class="invoke" x="${(w / 2).toFixed(1)}" y="36" text-anchor="middle">⟳ ${escapeXml(s.invoke)}</text>`);
    out.push('</g>');
  }
  out.push('</g></svg>');
  return `${out.join('\n')}\n`;
}
