// The message browser: one partition at a time, from the first or last
// message, an offset or a time; paged by offset, oldest or newest first;
// payloads as text, JSON or hex, and user headers decoded by their kind.
// Payloads are untrusted: they only ever reach the page as text.

import { api, seg } from '../api.js';
import { h, fill, field, select, table, button, link, section, errorBox } from '../dom.js';
import { count, timestamp, base64ToBytes, payloadView, headerValue, text } from '../format.js';

const PAGE_SIZES = [10, 20, 50, 100];

function headersTable(headers) {
  if (typeof headers === 'string') {
    return h('div', { class: 'headers' }, h('p', { class: 'payload-note' }, `Headers in an unknown layout (${base64ToBytes(headers).length} bytes).`));
  }
  if (!headers?.length) return null;
  return h(
    'div',
    { class: 'headers' },
    table(
      [
        { title: 'Header', cell: (f) => (f.key.kind === 'string' ? text(base64ToBytes(f.key.value)) : headerValue(f.key)) },
        { title: 'Kind', cell: (f) => f.value.kind },
        { title: 'Value', cell: (f) => h('span', { class: 'mono' }, headerValue(f.value)) },
      ],
      headers,
      '',
      'Headers',
    ),
  );
}

function messageCard(message, viewKind) {
  const data = base64ToBytes(message.payload);
  const shown = payloadView(data, viewKind);
  const header = message.header;
  return h(
    'article',
    { class: 'message', 'aria-label': `Message at offset ${header.offset}` },
    h(
      'div',
      { class: 'message-head' },
      h('span', null, 'Offset ', h('strong', null, header.offset)),
      h('span', null, 'Time ', h('strong', null, timestamp(header.timestamp))),
      h('span', null, 'Size ', h('strong', null, `${count(data.length)} B`)),
      h('span', null, 'ID ', h('strong', { class: 'mono' }, header.id)),
    ),
    h('pre', { class: 'payload' }, shown.body),
    shown.note ? h('div', { class: 'payload-note' }, shown.note) : null,
    headersTable(message.user_headers),
  );
}

function controls(topic, state, run) {
  const partition = select(topic.partitions.map((p) => [p.id, `Partition ${p.id}`]), state.partition, { name: 'partition' });
  const start = select([['last', 'Newest messages'], ['first', 'Oldest messages'], ['offset', 'From an offset'], ['timestamp', 'From a time']], state.kind, { name: 'kind' });
  const offset = h('input', { name: 'offset', type: 'number', min: 0, value: state.offset });
  const time = h('input', { name: 'time', type: 'datetime-local', step: 1, value: state.time });
  const size = select(PAGE_SIZES.map((n) => [n, `${n} per page`]), state.count, { name: 'count' });
  const order = select([['newest', 'Newest first'], ['oldest', 'Oldest first']], state.order, { name: 'order' });
  const viewKind = select([['text', 'Text'], ['json', 'JSON'], ['hex', 'Hex']], state.view, { name: 'view' });
  const offsetField = field('Offset', offset);
  const timeField = field('Time', time);
  const sync = () => {
    offsetField.hidden = start.value !== 'offset';
    timeField.hidden = start.value !== 'timestamp';
  };
  start.addEventListener('change', sync);
  sync();
  const form = h(
    'form',
    { class: 'toolbar' },
    field('Partition', partition),
    field('Start', start),
    offsetField,
    timeField,
    field('Page size', size),
    field('Order', order),
    field('Payload as', viewKind),
    h('button', { type: 'submit', class: 'btn btn-primary' }, 'Show messages'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    Object.assign(state, {
      partition: Number(partition.value),
      kind: start.value,
      offset: offset.value || '0',
      time: time.value,
      count: Number(size.value),
      order: order.value,
      view: viewKind.value,
    });
    run(state.kind, startValue(state));
  });
  for (const el of [order, viewKind]) {
    el.addEventListener('change', () => {
      state.order = order.value;
      state.view = viewKind.value;
      run(null);
    });
  }
  return form;
}

function startValue(state) {
  if (state.kind === 'offset') return state.offset;
  if (state.kind === 'timestamp') return state.time ? String(new Date(state.time).getTime() * 1000) : '0';
  return '0';
}

export async function messagesPage(view, streamId, topicId) {
  const base = `/streams/${seg(streamId)}/topics/${seg(topicId)}`;
  const route = `/streams/${streamId}/topics/${topicId}`;
  const head = h('div', { class: 'page-head' });
  const toolbar = h('div', { class: 'panel' });
  const results = h('div', { class: 'page-body' });
  fill(view.main, head, toolbar, results);
  let topic;
  try {
    const [stream, found] = await Promise.all([api('GET', `/streams/${seg(streamId)}`), api('GET', base)]);
    topic = found;
    topic.partitions.sort((a, b) => a.id - b.id);
    view.crumbs([['Streams', '/streams'], [stream.name, `/streams/${stream.id}`], [topic.name, route], ['Messages']]);
    fill(
      head,
      h('div', null, h('h1', null, `Messages in ${topic.name}`), h('p', null, 'Reading here never moves a consumer offset.')),
      h('div', { class: 'actions' }, link('Send messages', `${route}/send`, { class: 'btn' })),
    );
  } catch (e) {
    view.crumbs([['Streams', '/streams'], ['Messages']]);
    fill(results, errorBox(e.message));
    return;
  }
  const state = { partition: topic.partitions[0]?.id ?? 0, kind: 'last', offset: '0', time: '', count: 20, order: 'newest', view: 'text' };
  let query = null;
  let page = null;

  const show = () => {
    if (!page) return;
    const messages = [...page.messages].sort((a, b) => Number(a.header.offset) - Number(b.header.offset));
    const first = messages.length ? Number(messages[0].header.offset) : null;
    const last = messages.length ? Number(messages[messages.length - 1].header.offset) : null;
    if (state.order === 'newest') messages.reverse();
    const older = button('Older', () => {
      const from = Math.max(0, first - state.count);
      run('offset', String(from), first - from);
    }, null, { disabled: first === null || first === 0 });
    const newer = button('Newer', () => run('offset', String(last + 1)), null, { disabled: last === null || last >= Number(page.current_offset) });
    const summary = messages.length
      ? `Offsets ${first} to ${last} of partition ${page.partition_id} (latest offset ${page.current_offset}).`
      : `No messages here in partition ${state.partition}.`;
    const pager = h('div', { class: 'pager' }, h('span', null, summary), h('div', { class: 'actions' }, older, newer));
    fill(results, section(`${messages.length} ${messages.length === 1 ? 'message' : 'messages'}`, null, pager, h('div', { class: 'messages' }, messages.map((m) => messageCard(m, state.view)))));
  };

  async function run(kind, value, size) {
    if (kind) query = { kind, value, count: size ?? state.count };
    if (!query) return;
    if (kind === null && page) {
      show();
      return;
    }
    try {
      page = await api('GET', `${base}/messages`, {
        query: { consumer_id: '1', partition_id: state.partition, kind: query.kind, value: query.value, count: query.count, auto_commit: 'false' },
      });
      show();
    } catch (e) {
      fill(results, errorBox(e.message));
    }
  }

  fill(toolbar, controls(topic, state, run));
  if (topic.partitions.length === 0) {
    fill(results, h('p', { class: 'empty' }, 'This topic has no partitions, so it holds no messages.'));
    return;
  }
  await run('last', '0');
  view.refresh(() => run(query.kind, query.value, query.count));
}
