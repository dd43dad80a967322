// A topic: its settings, partitions (add, delete), segments (delete the
// oldest sealed ones) and consumer groups with their lag.

import { api, seg } from '../api.js';
import { h, fill, field, table, button, link, section, stat, errorBox } from '../dom.js';
import { formDialog, confirmDialog, notify } from '../dialogs.js';
import { count, bytes, size, timestamp } from '../format.js';
import { topicDialog, purgeTopic, deleteTopic, expiryText } from './streams.js';
import { lagOf } from './groups.js';

function numberInput(name, value, max) {
  return h('input', { name, type: 'number', min: 1, max, value, required: true });
}

function formNumber(form, name) {
  return Number(new FormData(form).get(name));
}

function addPartitionsDialog(base, done) {
  formDialog({
    title: 'Add partitions',
    fields: [field('Partitions to add', numberInput('count', 1, 1000), 'New partitions get the next free numbers. Consumer groups rebalance.')],
    submitLabel: 'Add',
    submit: (form) => api('POST', `${base}/partitions`, { body: { partitions_count: formNumber(form, 'count') } }),
    done: async () => {
      notify('Partitions added.');
      await done();
    },
  });
}

function deletePartitionsDialog(base, topic, done) {
  formDialog({
    title: 'Delete partitions',
    fields: [
      h('p', null, 'The highest-numbered partitions are deleted with all of their messages.'),
      field('Partitions to delete', numberInput('count', 1, topic.partitions_count)),
    ],
    submitLabel: 'Delete',
    danger: true,
    submit: (form) => api('DELETE', `${base}/partitions`, { query: { partitions_count: formNumber(form, 'count') } }),
    done: async () => {
      notify('Partitions deleted.');
      await done();
    },
  });
}

function deleteSegmentsDialog(base, partition, sealedCount, done) {
  formDialog({
    title: `Delete segments of partition ${partition}`,
    fields: [
      h('p', null, `The ${sealedCount === 1 ? 'oldest sealed segment is' : `${sealedCount} oldest sealed segments are`} deleted with their messages; the active segment always stays.`),
    ],
    submitLabel: 'Delete',
    danger: true,
    submit: () => api('DELETE', `${base}/partitions/${partition}`, { query: { segments_count: sealedCount } }),
    done: async () => {
      notify('Segments deleted.');
      await done();
    },
  });
}

function createGroupDialog(base, done) {
  formDialog({
    title: 'Create consumer group',
    fields: [field('Name', h('input', { name: 'name', required: true, maxlength: 255, autocomplete: 'off' }))],
    submitLabel: 'Create',
    submit: (form) => api('POST', `${base}/consumer-groups`, { body: { name: String(new FormData(form).get('name')).trim() } }),
    done: async () => {
      notify('Consumer group created.');
      await done();
    },
  });
}

async function deleteGroup(base, group, done) {
  const sure = await confirmDialog({
    title: `Delete consumer group ${group.name}?`,
    message: 'Its members leave and its stored offsets are forgotten.',
    confirmLabel: 'Delete',
  });
  if (!sure) return;
  try {
    await api('DELETE', `${base}/consumer-groups/${group.id}`);
    notify(`Consumer group ${group.name} deleted.`);
  } catch (e) {
    notify(e.message);
  }
  await done();
}

/** A group's total lag, or a sentence when it cannot be read. */
async function groupLag(base, group) {
  try {
    const lines = await api('GET', `${base}/consumer-groups/${group.id}/offsets`);
    return count(lines.reduce((sum, line) => sum + lagOf(line), 0));
  } catch {
    return 'Unknown';
  }
}

function settings(topic) {
  const options = Object.entries(topic.options ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return section(
    'Settings',
    null,
    h(
      'dl',
      { class: 'kv' },
      [
        ['Message expiry', expiryText(topic)],
        ['Max size', bytes(topic.max_topic_size)],
        ['Compression', topic.compression_algorithm],
        ['Created', timestamp(topic.created_at)],
        ...options.map(([key, option]) => [key, `${option.value}${option.explicit ? '' : ' (default)'}`]),
      ].map(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
    ),
  );
}

function partitionsSection(base, topic, load) {
  return section(
    'Partitions',
    [button('Add partitions', () => addPartitionsDialog(base, load)), button('Delete partitions', () => deletePartitionsDialog(base, topic, load), 'danger')],
    table(
      [
        { title: 'Partition', cell: (p) => p.id, numeric: true },
        { title: 'Current offset', cell: (p) => count(p.current_offset), numeric: true },
        { title: 'Messages', cell: (p) => count(p.messages_count), numeric: true },
        { title: 'Size', cell: (p) => size(p.size), numeric: true },
        { title: 'Created', cell: (p) => timestamp(p.created_at) },
      ],
      topic.partitions,
      'This topic has no partitions.',
      'Partitions',
    ),
  );
}

/** Partitions whose segments the topic page lists (one request each). */
const SEGMENT_PARTITIONS_MAX = 32;

async function segmentsSection(base, topic, load) {
  const shown = topic.partitions.slice(0, SEGMENT_PARTITIONS_MAX);
  const lists = await Promise.all(shown.map((p) => api('GET', `${base}/partitions/${p.id}/segments`).catch(() => [])));
  const rows = [];
  shown.forEach((p, i) => {
    let sealedSeen = 0;
    for (const segment of lists[i]) {
      if (segment.sealed) sealedSeen += 1;
      rows.push({ partition: p.id, segment, sealedThrough: segment.sealed ? sealedSeen : 0 });
    }
  });
  return section(
    'Segments',
    null,
    table(
      [
        { title: 'Partition', cell: (r) => r.partition, numeric: true },
        { title: 'Start offset', cell: (r) => count(r.segment.start_offset), numeric: true },
        { title: 'End offset', cell: (r) => (r.segment.end_offset === null ? '–' : count(r.segment.end_offset)), numeric: true },
        { title: 'Messages', cell: (r) => count(r.segment.messages_count), numeric: true },
        { title: 'Size', cell: (r) => bytes(r.segment.size_bytes), numeric: true },
        { title: 'Last message', cell: (r) => timestamp(r.segment.max_timestamp) },
        { title: 'State', cell: (r) => h('span', { class: ['badge', !r.segment.sealed && 'badge-ok'] }, r.segment.sealed ? 'Sealed' : 'Active') },
        {
          title: 'Actions',
          cell: (r) =>
            r.segment.sealed
              ? button('Delete', () => deleteSegmentsDialog(base, r.partition, r.sealedThrough, load), 'quiet', { 'aria-label': `Delete segments of partition ${r.partition} through offset ${r.segment.end_offset}` })
              : null,
        },
      ],
      rows,
      'No segments.',
      'Segments',
    ),
    topic.partitions.length > shown.length
      ? h('p', { class: 'hint' }, `Segments of the first ${shown.length} of ${topic.partitions.length} partitions.`)
      : null,
  );
}

async function groupsSection(base, route, load) {
  const groups = await api('GET', `${base}/consumer-groups`);
  groups.sort((a, b) => a.id - b.id);
  const lags = await Promise.all(groups.map((g) => groupLag(base, g)));
  groups.forEach((g, i) => {
    g.lag = lags[i];
  });
  return section(
    'Consumer groups',
    [button('Create consumer group', () => createGroupDialog(base, load))],
    table(
      [
        { title: 'Name', cell: (g) => link(g.name, `${route}/groups/${g.id}`) },
        { title: 'ID', cell: (g) => g.id, numeric: true },
        { title: 'Members', cell: (g) => count(g.members_count), numeric: true },
        { title: 'Lag', cell: (g) => g.lag, numeric: true },
        { title: 'Actions', cell: (g) => button('Delete', () => deleteGroup(base, g, load), 'danger', { 'aria-label': `Delete consumer group ${g.name}` }) },
      ],
      groups,
      'No consumer groups. Groups are joined by clients over TCP, QUIC or WebSocket.',
      'Consumer groups',
    ),
  );
}

export async function topicPage(view, streamId, topicId) {
  const base = `/streams/${seg(streamId)}/topics/${seg(topicId)}`;
  const route = `/streams/${streamId}/topics/${topicId}`;
  const head = h('div', { class: 'page-head' });
  const body = h('div', { class: 'page-body' });
  fill(view.main, head, body);
  const load = async () => {
    try {
      const [stream, topic] = await Promise.all([api('GET', `/streams/${seg(streamId)}`), api('GET', base)]);
      view.crumbs([['Streams', '/streams'], [stream.name, `/streams/${stream.id}`], [topic.name]]);
      topic.partitions.sort((a, b) => a.id - b.id);
      fill(
        head,
        h('div', null, h('h1', null, topic.name), h('p', null, `Topic ${topic.id} in stream ${stream.name}`)),
        h(
          'div',
          { class: 'actions' },
          link('Messages', `${route}/messages`, { class: 'btn btn-primary' }),
          link('Send messages', `${route}/send`, { class: 'btn' }),
          button('Edit', () => topicDialog(stream.id, topic, load), null, { 'aria-label': `Edit topic ${topic.name}` }),
          button('Purge', () => purgeTopic(stream.id, topic, load), null, { 'aria-label': `Purge topic ${topic.name}` }),
          button('Delete', async () => {
            if (await deleteTopic(stream.id, topic, async () => {})) view.go(`/streams/${stream.id}`);
          }, 'danger', { 'aria-label': `Delete topic ${topic.name}` }),
        ),
      );
      const groups = await groupsSection(base, route, load);
      fill(
        body,
        h(
          'div',
          { class: 'stats' },
          stat('Partitions', count(topic.partitions_count)),
          stat('Messages', count(topic.messages_count)),
          stat('Size', size(topic.size)),
          stat('Segments', count(topic.partitions.reduce((n, p) => n + p.segments_count, 0))),
        ),
        partitionsSection(base, topic, load),
        groups,
        await segmentsSection(base, topic, load),
        settings(topic),
      );
    } catch (e) {
      view.crumbs([['Streams', '/streams'], [`Topic ${topicId}`]]);
      fill(body, errorBox(e.message));
    }
  };
  await load();
  view.refresh(load);
}
