// The inspector page: renders the snapshot, then applies server-sent updates.
// Plain browser JavaScript, no framework, no network beyond this server.
const token = new URLSearchParams(location.search).get('token') ?? '';
const headers = { 'x-hive-token': token };
const $ = (sel, el = document) => el.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

let machines = {};
let state = null;
/** Cluster mode: the name of the machine this inspector runs on (null on one machine). */
let clusterHost = null;

async function getJson(path) {
  const res = await fetch(path, { headers });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res.json();
}

function highlight(container, value) {
  highlightAll(container, [value]);
}

/** Marks every named state of a diagram active (a machine agent's nested states: parent and child). */
function highlightAll(container, values) {
  if (!container) return;
  for (const el of container.querySelectorAll('.state.active')) el.classList.remove('active');
  for (const value of values) {
    const node = container.querySelector(`.state[data-state="${CSS.escape(String(value))}"]`);
    if (node) node.classList.add('active');
  }
}

function badge(text, cls = '') {
  return `<span class="badge ${cls}">${esc(text)}</span>`;
}

/** A JSON value as a tree of <details>; a string that holds JSON is shown as what it holds. */
function jsonTree(value, depth = 0) {
  if (typeof value === 'string' && /^\s*[[{]/.test(value)) {
    try {
      return jsonTree(JSON.parse(value), depth);
    } catch {
      // a string after all
    }
  }
  if (value === null || typeof value !== 'object') return `<span class="json-${value === null ? 'null' : typeof value}">${esc(JSON.stringify(value))}</span>`;
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  if (entries.length === 0) return Array.isArray(value) ? '[]' : '{}';
  const items = entries.map(([k, v]) => `<li><span class="json-key">${esc(k)}</span>: ${jsonTree(v, depth + 1)}</li>`).join('');
  return `<details class="json" ${depth < 1 ? 'open' : ''}><summary>${Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`}</summary><ul>${items}</ul></details>`;
}

/** One turn of an agent's transcript: its input, then what the brain did (prompt size, process, stderr, output, errors). */
function turnItem(events) {
  const line = (e) => {
    switch (e.kind) {
      case 'input': return `<div class="turn-input">${esc(e.text)}</div>`;
      case 'prompt': return `<div class="muted">prompt: ${esc(e.chars)} characters</div>`;
      case 'process': return `<div class="muted">${esc(e.command)} exited ${esc(e.exitCode)} in ${esc(e.ms)} ms</div>`;
      case 'request': return `<div class="muted">request to ${esc(e.model)} (${esc(e.messages)} messages)</div>`;
      case 'response': return `<div class="muted">answered in ${esc(e.ms)} ms</div><div class="turn-output">${esc(e.text)}</div>`;
      case 'stderr': return `<div class="turn-stderr">${esc(e.text)}</div>`;
      case 'output': return `<div class="turn-output">${esc(e.text)}</div>`;
      case 'error': return `<div class="turn-error">attempt ${esc(e.attempt)}: ${esc(e.message)}</div>`;
      case 'restore': return `<div class="muted">restored: ${esc(e.mode)} (${esc(e.history)} turns of history)</div>`;
      default: return `<div class="muted">${esc(e.kind)}</div>`;
    }
  };
  return `<div class="turn">${events.map(line).join('')}</div>`;
}

function actorCard(a) {
  const card = document.createElement('div');
  card.className = 'card actor';
  card.dataset.actor = a.id;
  card.innerHTML = `<h3><span>${esc(a.id)}</span><span class="muted kind"></span><span class="value"></span></h3>
    <div class="badges"></div><div class="diagram"></div>
    <details><summary class="muted">context</summary><div class="context"></div></details>
    <details class="turns-box"><summary class="muted">turns</summary><div class="turns"></div></details>`;
  // The transcript is read when asked for (and again each time the box is opened).
  $('.turns-box', card).addEventListener('toggle', async (e) => {
    if (!e.target.open) return;
    const data = await getJson(`/api/turns?agent=${encodeURIComponent(a.id)}`);
    $('.turns', card).innerHTML = data.turns.length === 0 ? '<p class="muted">no turns recorded</p>' : data.turns.map(turnItem).join('');
  });
  if (a.machine && machines[a.machine]) $('.diagram', card).innerHTML = machines[a.machine];
  else $('.diagram', card).innerHTML = `<p class="muted">passive (${esc(a.brain)}): messages wait in its inbox</p>`;
  return card;
}

/**
 * A machine agent's card leads with its own machine (drawn by the server from its
 * definition), its state and context and the last events; the turn loop every agent runs
 * folds into a small secondary line.
 */
function ownMachine(card, a) {
  if (!card.dataset.own) {
    card.dataset.own = 'true';
    const loop = $('.diagram', card);
    const box = document.createElement('details');
    box.className = 'loop';
    box.innerHTML = '<summary class="muted">turn loop: <span class="loop-value"></span></summary>';
    loop.replaceWith(box);
    box.appendChild(loop);
    const own = document.createElement('div');
    own.className = 'own';
    own.innerHTML = '<div class="own-diagram"></div><div class="own-state"></div><details open><summary class="muted">last events</summary><ol class="recent"></ol></details>';
    box.before(own);
    getJson(`/api/agent-machine?agent=${encodeURIComponent(a.id)}`).then((d) => {
      $('.own-diagram', card).innerHTML = d.svg;
      highlightAll($('.own-diagram', card), JSON.parse(card.dataset.active ?? '[]'));
    }, (err) => ($('.own-diagram', card).innerHTML = `<p class="muted">${esc(err.message)}</p>`));
  }
  const own = a.own;
  const active = JSON.stringify(own.active);
  if (card.dataset.active !== active) {
    card.dataset.active = active;
    highlightAll($('.own-diagram', card), own.active);
  }
  $('.own-state', card).innerHTML = `<span class="badge">${esc(own.status)}</span> <strong class="own-value">${esc(own.active.at(-1) ?? JSON.stringify(own.value))}</strong><div class="own-context">${jsonTree(own.context)}</div>`;
  $('.recent', card).innerHTML = own.recent
    .slice()
    .reverse()
    .map((r) => `<li${r.ignored ? ' class="ignored"' : ''}><code>${esc(r.event)}</code> ${esc(r.from)} → ${esc(r.to)}${r.ignored ? ' <span class="muted">(ignored)</span>' : ''} <span class="muted">${esc(new Date(r.at).toISOString().slice(11, 23))}</span></li>`)
    .join('');
}

function updateActorCard(card, a) {
  $('.kind', card).textContent = `${a.kind} · ${a.brain}`;
  const badges = [
    badge(a.status, a.status === 'failed' ? 'bad' : a.status === 'backingOff' || a.status === 'crashed' ? 'warn' : ''),
    badge(`restarts ${a.restarts}`, a.restarts > 0 ? 'warn' : ''),
    badge(`inbox ${a.inboxDepth}`, a.inboxDepth > 0 ? 'warn' : ''),
    badge(`cursor ${a.cursor}`),
    a.host ? badge(`worker ${a.host}${a.threadId != null ? ` (thread ${a.threadId})` : ''}`) : '',
    // Cluster mode: the machine it runs on (a leased agent: where its lease is held now).
    a.runsOn !== undefined ? badge(a.runsOn ? `on ${a.runsOn}${a.runsOn === clusterHost ? ' (here)' : ''}` : 'on no machine', a.runsOn ? 'machine' : 'warn') : '',
  ];
  $('.badges', card).innerHTML = badges.join('');
  const context = JSON.stringify(a.context ?? { cursor: a.cursor, handled: a.handled });
  if (card.dataset.context !== context) {
    card.dataset.context = context;
    $('.context', card).innerHTML = jsonTree(a.context ?? { cursor: a.cursor, handled: a.handled });
  }
  if (a.own) ownMachine(card, a);
  setValue(card, a.state);
}

function setValue(card, value) {
  card.dataset.value = value;
  const loopValue = $('.loop-value', card);
  // A machine agent's header shows its own state; the turn loop's goes to its folded line.
  if (loopValue) {
    loopValue.textContent = value;
    $('.value', card).textContent = $('.own-value', card)?.textContent ?? value;
  } else $('.value', card).textContent = value;
  highlight($('.diagram', card), value);
}

const RUNTIME_KINDS = new Set(['router', 'miner', 'reflector']);

/** Agents (and passive ones) in Agents; the runtime's own actors in the collapsed Runtime section. */
function renderActors(actors) {
  for (const [box, list] of [
    [$('#actors'), actors.filter((a) => !RUNTIME_KINDS.has(a.kind))],
    [$('#runtime-actors'), actors.filter((a) => RUNTIME_KINDS.has(a.kind))],
  ]) {
    const seen = new Set();
    for (const a of list) {
      seen.add(a.id);
      let card = box.querySelector(`.actor[data-actor="${CSS.escape(a.id)}"]`);
      if (!card) {
        card = actorCard(a);
        box.appendChild(card);
      }
      updateActorCard(card, a);
    }
    for (const card of [...box.children]) if (!seen.has(card.dataset.actor)) card.remove();
  }
}

/** One message with its full body, who it reached and whether they handled it. */
function messageItem(m) {
  const to = m.deliveries.map((d) => `${esc(d.agent)} #${d.seq}${d.handled ? ' ✓' : ' …'}`).join(', ');
  // When it was delivered, and the turn that handled it (from the event log).
  const timeline = m.deliveries
    .filter((d) => d.deliveredAt || d.turn)
    .map((d) => `<div class="timeline">${esc(d.agent)}: ${d.deliveredAt ? `delivered ${esc(d.deliveredAt.slice(11, 23))}` : ''}${d.turn ? ` · handled in the turn committed ${esc(d.turn.at.slice(11, 23))} (thought ${esc(d.turn.thinkMs)} ms${d.turn.handled.length > 1 ? `, ${d.turn.handled.length} messages` : ''}${d.turn.sent.length ? `, sent ${d.turn.sent.length}` : ''})` : ''}</div>`)
    .join('');
  return `<li class="message" data-id="${esc(m.id)}" data-conversation="${esc(m.conversation)}">
    <div class="meta"><strong>${esc(m.from)}</strong> → ${to || esc(m.to)} <span class="badge">${esc(m.act)}</span>${m.needs_human ? ' <span class="badge warn">needs human</span>' : ''}
    <span class="muted">${esc(m.created_at)} · ${esc(m.id)}${m.in_reply_to ? ` · in reply to ${esc(m.in_reply_to)}` : ''}</span></div>
    ${m.subject ? `<div><strong>${esc(m.subject)}</strong></div>` : ''}<div class="body">${esc(m.body)}</div>${timeline}</li>`;
}

async function showConversation(id) {
  const data = await getJson(`/api/conversation?id=${encodeURIComponent(id)}`);
  $('#conversation-section').hidden = false;
  $('#conversation-id').textContent = id;
  $('#search-results').innerHTML = '';
  $('#conversation').innerHTML = data.messages.map(messageItem).join('') || '<li class="muted">no messages (yet) in this conversation</li>';
  $('#conversation-section').scrollIntoView({ block: 'start' });
}

async function search(query) {
  const data = await getJson(`/api/search?q=${encodeURIComponent(query)}`);
  $('#conversation-section').hidden = false;
  $('#conversation-id').textContent = `search: ${query}`;
  $('#conversation').innerHTML = '';
  $('#search-results').innerHTML = `<ul>${data.messages.map(messageItem).join('') || '<li class="muted">nothing found</li>'}</ul>`;
}

async function renderGod() {
  const data = await getJson('/api/god');
  $('#god').innerHTML = `<ul>${data.messages.map(messageItem).join('') || '<li class="muted">nothing yet</li>'}</ul>`;
}

// A message anywhere on the page opens its conversation.
document.addEventListener('click', (e) => {
  const item = e.target.closest?.('[data-conversation]');
  if (item && !e.target.closest('button, textarea, input, a')) void showConversation(item.dataset.conversation);
});
$('#search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const q = $('#search').value.trim();
  if (q) void search(q);
});
$('#conversation-close').addEventListener('click', () => {
  $('#conversation-section').hidden = true;
});

function renderHosts(hosts) {
  const box = $('#hosts');
  const seen = new Set();
  for (const h of hosts) {
    seen.add(h.id);
    let card = box.querySelector(`.host[data-host="${CSS.escape(h.id)}"]`);
    if (!card) {
      card = document.createElement('div');
      card.className = 'card host';
      card.dataset.host = h.id;
      card.innerHTML = `<h3><span>${esc(h.id)}</span><span class="value"></span></h3><div class="badges"></div><div class="diagram">${machines['supervised-child'] ?? ''}</div>`;
      box.appendChild(card);
    }
    $('.badges', card).innerHTML = [badge(`restarts ${h.restarts}`, h.restarts > 0 ? 'warn' : ''), h.agents.length ? badge(`agents ${h.agents.join(', ')}`) : badge('router'), h.threadId != null ? badge(`thread ${h.threadId}`) : ''].join('');
    card.dataset.value = h.value;
    $('.value', card).textContent = h.value;
    highlight(card, h.value);
  }
  for (const card of [...box.children]) if (!seen.has(card.dataset.host)) card.remove();
}

function renderFlow(messages) {
  const recent = messages.slice(-40);
  const box = $('#flow');
  if (recent.length === 0) {
    box.innerHTML = '<p class="muted">no messages yet</p>';
    return;
  }
  const names = [];
  for (const m of recent) for (const n of [m.from, m.agent]) if (!names.includes(n)) names.push(n);
  const colW = 150;
  const rowH = 26;
  const top = 30;
  const width = Math.max(names.length * colW, 400);
  const height = top + recent.length * rowH + 10;
  const x = (n) => names.indexOf(n) * colW + colW / 2;
  const parts = [`<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><defs><marker id="flow-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#5a6a8a"/></marker></defs>`];
  for (const n of names) {
    parts.push(`<text class="head" x="${x(n)}" y="16" text-anchor="middle">${esc(n)}</text>`);
    parts.push(`<line class="lifeline" x1="${x(n)}" y1="22" x2="${x(n)}" y2="${height}"/>`);
  }
  recent.forEach((m, i) => {
    const y = top + i * rowH + 14;
    const x1 = x(m.from);
    const x2 = x(m.agent);
    const ask = m.question;
    const label = `${m.act}${m.subject ? `: ${m.subject}` : ''}`.slice(0, 40);
    if (x1 === x2) parts.push(`<path class="msg${ask ? ' ask' : ''}" d="M${x1},${y - 6} h24 v10 h-22" marker-end="url(#flow-arrow)"/>`);
    else parts.push(`<line class="msg${ask ? ' ask' : ''}" x1="${x1}" y1="${y}" x2="${x2 + (x2 > x1 ? -4 : 4)}" y2="${y}" marker-end="url(#flow-arrow)"/>`);
    parts.push(`<text data-conversation="${esc(m.conversation)}" class="clickable" x="${(x1 + x2) / 2}" y="${y - 4}" text-anchor="middle"><title>${esc(`${m.at} ${m.from} → ${m.agent}: ${m.body}`)}</title>${esc(label)}</text>`);
  });
  parts.push('</svg>');
  box.innerHTML = parts.join('');
}

function renderDead(list) {
  const body = $('#dead tbody');
  body.innerHTML = list
    .map(
      (d) =>
        `<tr data-name="${esc(d.name)}"><td>${esc(d.at ?? '')}</td><td>${esc(d.code ?? '')}</td><td>${esc(d.source ?? d.name)}</td><td>${esc(d.error)}</td>` +
        `<td><button type="button" data-action="retry">Retry</button> <button type="button" data-action="discard">Discard</button> <span class="status"></span></td></tr>`,
    )
    .join('');
  for (const button of body.querySelectorAll('button')) {
    button.addEventListener('click', async () => {
      const row = button.closest('tr');
      const status = $('.status', row);
      status.textContent = '…';
      const res = await fetch(`/api/dead-letters/${button.dataset.action}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: row.dataset.name }) });
      const out = await res.json().catch(() => ({}));
      const what = res.ok ? (out.id ? `retried as ${out.id}` : 'discarded') : `failed: ${out.error?.message ?? res.status}`;
      status.textContent = what;
      // The row leaves the table once done (the list is republished): say it below it too.
      $('#dead-status').textContent = `${row.dataset.name}: ${what}`;
    });
  }
  $('#dead-empty').hidden = list.length > 0;
}

function renderQuestions(all) {
  const box = $('#asks');
  const questions = all.filter((q) => q.state === 'open');
  // A card whose question closed meanwhile says what became of it instead of vanishing.
  for (const q of all) {
    const card = q.state === 'open' ? null : box.querySelector(`.ask[data-question="${CSS.escape(q.id)}"]`);
    if (!card || card.dataset.state === q.state) continue;
    card.dataset.state = q.state;
    $('textarea', card).disabled = true;
    $('button', card).disabled = true;
    $('.status', card).textContent = q.state === 'withdrawn' ? `withdrawn by ${q.from}: ${q.withdrawn?.reason ?? ''}` : `answered (${q.answered?.answer_id ?? ''})`;
  }
  const ids = new Set(all.map((q) => q.id));
  for (const el of [...box.children]) if (!ids.has(el.dataset.question)) el.remove();
  $('#asks-section').hidden = box.children.length === 0 && questions.length === 0;
  for (const q of questions) {
    if (box.querySelector(`.ask[data-question="${CSS.escape(q.id)}"]`)) continue;
    const card = document.createElement('div');
    card.className = 'ask';
    card.dataset.question = q.id;
    card.innerHTML = `<strong>${esc(q.from)}</strong> asks <span class="muted">(${esc(q.act)}, ${esc(q.created_at)})</span>
      <div><strong>${esc(q.subject)}</strong></div><div class="q">${esc(q.body)}</div>
      <textarea placeholder="Your answer"></textarea><button type="button">Answer</button><span class="status"></span>`;
    $('button', card).addEventListener('click', async () => {
      const body = $('textarea', card).value;
      const status = $('.status', card);
      status.textContent = 'sending…';
      const res = await fetch('/api/answer', { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ id: q.id, body }) });
      const out = await res.json().catch(() => ({}));
      status.textContent = res.ok ? `answered (${out.id})` : `failed: ${out.error?.message ?? res.status}`;
      if (res.ok) card.dataset.answered = 'true';
    });
    box.appendChild(card);
  }
}

function applySnapshot(s) {
  state = s;
  clusterHost = s.clusterHost ?? null;
  $('#root').textContent = `${s.root} · pid ${s.pid}`;
  renderActors(s.actors);
  renderHosts(s.hosts);
  renderFlow(s.messages);
  renderDead(s.deadLetters);
  renderQuestions(s.questions);
  void renderGod();
  document.body.dataset.ready = 'true';
}

function connect() {
  const es = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  const conn = $('#conn');
  es.onopen = () => {
    conn.dataset.connected = 'true';
    conn.textContent = 'live';
  };
  es.onerror = () => {
    conn.dataset.connected = 'false';
    conn.textContent = 'reconnecting…';
  };
  es.addEventListener('snapshot', (e) => applySnapshot(JSON.parse(e.data)));
  es.addEventListener('state', (e) => {
    const { actor, value } = JSON.parse(e.data);
    const card = document.querySelector(`.actor[data-actor="${CSS.escape(actor)}"]`);
    if (card) setValue(card, value);
  });
  es.addEventListener('actors', (e) => {
    const d = JSON.parse(e.data);
    clusterHost = d.clusterHost ?? null;
    renderActors(d.actors);
    renderHosts(d.hosts);
  });
  es.addEventListener('message', (e) => {
    if (!state) return;
    const m = JSON.parse(e.data);
    state.messages.push(m);
    if (state.messages.length > 200) state.messages.shift();
    renderFlow(state.messages);
    if (m.agent === 'god') void renderGod();
  });
  es.addEventListener('dead-letters', (e) => renderDead(JSON.parse(e.data)));
  es.addEventListener('questions', (e) => renderQuestions(JSON.parse(e.data)));
}

machines = await getJson('/api/machines');
connect();
