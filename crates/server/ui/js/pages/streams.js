// Streams (list, create, rename, purge, delete) and a stream's topics
// (list, create with partitions, expiry, max size, compression and
// durability; edit, purge, delete).

import { api, seg } from '../api.js';
import { h, fill, field, select, table, button, link, section, stat, errorBox } from '../dom.js';
import { formDialog, confirmDialog, notify } from '../dialogs.js';
import { count, duration, exactDuration, bytes, size, timestamp, U64_MAX } from '../format.js';

function input(name, props = {}) {
  return h('input', { name, autocomplete: 'off', ...props });
}

function value(form, name) {
  return String(new FormData(form).get(name) ?? '').trim();
}

export function createStreamDialog(done) {
  formDialog({
    title: 'Create stream',
    fields: [field('Name', input('name', { required: true, maxlength: 255 }))],
    submitLabel: 'Create',
    submit: (form) => api('POST', '/streams', { body: { name: value(form, 'name') } }),
    done: async (stream) => {
      notify(`Stream ${stream.name} created.`);
      await done(stream);
    },
  });
}

function renameStreamDialog(stream, done) {
  formDialog({
    title: `Rename stream ${stream.name}`,
    fields: [field('Name', input('name', { required: true, value: stream.name }))],
    submitLabel: 'Save',
    submit: (form) => api('PUT', `/streams/${stream.id}`, { body: { name: value(form, 'name') } }),
    done,
  });
}

async function purgeStream(stream, done) {
  const sure = await confirmDialog({
    title: `Purge stream ${stream.name}?`,
    message: 'Every message and consumer offset in all of its topics is deleted. The topics stay.',
    confirmLabel: 'Purge',
  });
  if (!sure) return;
  try {
    await api('DELETE', `/streams/${stream.id}/purge`);
    notify(`Stream ${stream.name} purged.`);
  } catch (e) {
    notify(e.message);
  }
  await done();
}

async function deleteStream(stream, done) {
  const sure = await confirmDialog({
    title: `Delete stream ${stream.name}?`,
    message: 'The stream, its topics, partitions, consumer groups and messages are deleted for good.',
    confirmLabel: 'Delete',
  });
  if (!sure) return;
  try {
    await api('DELETE', `/streams/${stream.id}`);
    notify(`Stream ${stream.name} deleted.`);
  } catch (e) {
    notify(e.message);
  }
  await done();
}

export async function streamsPage(view) {
  view.crumbs([['Streams']]);
  const body = h('div', { class: 'page-body' });
  const load = async () => {
    try {
      const streams = await api('GET', '/streams');
      streams.sort((a, b) => a.id - b.id);
      fill(
        body,
        section(
          `${streams.length} ${streams.length === 1 ? 'stream' : 'streams'}`,
          null,
          table(
            [
              { title: 'Name', cell: (s) => link(s.name, `/streams/${s.id}`) },
              { title: 'ID', cell: (s) => s.id, numeric: true },
              { title: 'Topics', cell: (s) => count(s.topics_count), numeric: true },
              { title: 'Messages', cell: (s) => count(s.messages_count), numeric: true },
              { title: 'Size', cell: (s) => size(s.size), numeric: true },
              { title: 'Created', cell: (s) => timestamp(s.created_at) },
              {
                title: 'Actions',
                cell: (s) =>
                  h(
                    'div',
                    { class: 'actions' },
                    button('Rename', () => renameStreamDialog(s, load), 'quiet', { 'aria-label': `Rename stream ${s.name}` }),
                    button('Purge', () => purgeStream(s, load), 'quiet', { 'aria-label': `Purge stream ${s.name}` }),
                    button('Delete', () => deleteStream(s, load), 'danger', { 'aria-label': `Delete stream ${s.name}` }),
                  ),
              },
            ],
            streams,
            'No streams yet. Create one to start.',
            'Streams',
          ),
        ),
      );
    } catch (e) {
      fill(body, errorBox(e.message));
    }
  };
  fill(
    view.main,
    h(
      'div',
      { class: 'page-head' },
      h('div', null, h('h1', null, 'Streams'), h('p', null, 'Streams group topics; each topic is split into partitions.')),
      button('Create stream', () => createStreamDialog(load), 'primary'),
    ),
    body,
  );
  await load();
  view.refresh(load);
}

function topicFields(topic) {
  const creating = !topic;
  const expiry = topic && String(topic.message_expiry) !== U64_MAX ? exactDuration(topic.message_expiry) : '';
  const maxSize = topic && String(topic.max_topic_size) !== U64_MAX ? `${topic.max_topic_size} B` : '';
  return [
    field('Name', input('name', { required: true, maxlength: 255, value: topic?.name })),
    creating ? field('Partitions', input('partitions', { type: 'number', min: 0, max: 1000, value: 1 })) : null,
    h(
      'div',
      { class: 'row' },
      field('Message expiry', input('expiry', { value: expiry, placeholder: 'Never' }), 'For example 7 days or 12h; empty keeps messages forever.'),
      field('Max size', input('max_size', { value: maxSize, placeholder: 'Unlimited' }), 'For example 10 GiB; empty means no limit.'),
    ),
    h(
      'div',
      { class: 'row' },
      field('Compression', select([['none', 'None'], ['gzip', 'Gzip']], topic?.compression_algorithm ?? 'none', { name: 'compression' })),
      creating ? field('Durability', select([['replicated', 'Replicated (quorum memory)'], ['persisted', 'Persisted (fsync on quorum)']], 'replicated', { name: 'durability' })) : null,
    ),
  ];
}

export function topicDialog(streamId, topic, done) {
  formDialog({
    title: topic ? `Edit topic ${topic.name}` : 'Create topic',
    fields: topicFields(topic),
    submitLabel: topic ? 'Save' : 'Create',
    submit: (form) => {
      const expiry = value(form, 'expiry');
      const maxSize = value(form, 'max_size');
      if (!topic) {
        const body = {
          name: value(form, 'name'),
          partitions_count: Number(value(form, 'partitions') || '0'),
          compression_algorithm: value(form, 'compression'),
          message_expiry: expiry || 0,
          max_topic_size: maxSize || 0,
          options: { durability: value(form, 'durability') },
        };
        return api('POST', `/streams/${seg(streamId)}/topics`, { body });
      }
      const body = {
        name: value(form, 'name'),
        compression_algorithm: value(form, 'compression'),
        message_expiry: expiry || 'never',
        max_topic_size: maxSize || 'unlimited',
      };
      return api('PUT', `/streams/${seg(streamId)}/topics/${topic.id}`, { body });
    },
    done: async () => {
      notify(topic ? 'Topic saved.' : 'Topic created.');
      await done();
    },
  });
}

export async function purgeTopic(streamId, topic, done) {
  const sure = await confirmDialog({
    title: `Purge topic ${topic.name}?`,
    message: 'Every message and consumer offset of the topic is deleted. Its partitions and groups stay.',
    confirmLabel: 'Purge',
  });
  if (!sure) return;
  try {
    await api('DELETE', `/streams/${seg(streamId)}/topics/${topic.id}/purge`);
    notify(`Topic ${topic.name} purged.`);
  } catch (e) {
    notify(e.message);
  }
  await done();
}

export async function deleteTopic(streamId, topic, done) {
  const sure = await confirmDialog({
    title: `Delete topic ${topic.name}?`,
    message: 'The topic, its partitions, consumer groups and messages are deleted for good.',
    confirmLabel: 'Delete',
  });
  if (!sure) return false;
  try {
    await api('DELETE', `/streams/${seg(streamId)}/topics/${topic.id}`);
    notify(`Topic ${topic.name} deleted.`);
  } catch (e) {
    notify(e.message);
    return false;
  }
  await done();
  return true;
}

export function expiryText(topic) {
  return String(topic.message_expiry) === U64_MAX || !topic.message_expiry ? 'Never' : duration(topic.message_expiry);
}

export async function streamPage(view, streamId) {
  const head = h('div', { class: 'page-head' });
  const body = h('div', { class: 'page-body' });
  fill(view.main, head, body);
  const load = async () => {
    let stream;
    try {
      stream = await api('GET', `/streams/${seg(streamId)}`);
    } catch (e) {
      view.crumbs([['Streams', '/streams'], [`Stream ${streamId}`]]);
      fill(body, errorBox(e.message));
      return;
    }
    view.crumbs([['Streams', '/streams'], [stream.name]]);
    fill(
      head,
      h('div', null, h('h1', null, stream.name), h('p', null, `Stream ${stream.id}, created ${timestamp(stream.created_at)}`)),
      h('div', { class: 'actions' }, button('Create topic', () => topicDialog(stream.id, null, load), 'primary')),
    );
    const topics = [...stream.topics].sort((a, b) => a.id - b.id);
    fill(
      body,
      h('div', { class: 'stats' }, stat('Topics', count(stream.topics_count)), stat('Messages', count(stream.messages_count)), stat('Size', size(stream.size))),
      section(
        'Topics',
        null,
        table(
          [
            { title: 'Name', cell: (t) => link(t.name, `/streams/${stream.id}/topics/${t.id}`) },
            { title: 'ID', cell: (t) => t.id, numeric: true },
            { title: 'Partitions', cell: (t) => count(t.partitions_count), numeric: true },
            { title: 'Messages', cell: (t) => count(t.messages_count), numeric: true },
            { title: 'Size', cell: (t) => size(t.size), numeric: true },
            { title: 'Expiry', cell: (t) => expiryText(t) },
            { title: 'Max size', cell: (t) => bytes(t.max_topic_size) },
            { title: 'Compression', cell: (t) => t.compression_algorithm },
            {
              title: 'Actions',
              cell: (t) =>
                h(
                  'div',
                  { class: 'actions' },
                  button('Edit', () => topicDialog(stream.id, t, load), 'quiet', { 'aria-label': `Edit topic ${t.name}` }),
                  button('Purge', () => purgeTopic(stream.id, t, load), 'quiet', { 'aria-label': `Purge topic ${t.name}` }),
                  button('Delete', () => deleteTopic(stream.id, t, load), 'danger', { 'aria-label': `Delete topic ${t.name}` }),
                ),
            },
          ],
          topics,
          'This stream has no topics yet.',
          'Topics',
        ),
      ),
    );
  };
  await load();
  view.refresh(load);
}
