// Users: the list, create, and one user's page to edit the username and
// status, global, per-stream and per-topic permissions, change the
// password, delete.

import { api, seg, session } from '../api.js';
import { h, fill, field, select, table, button, link, section, checkbox, errorBox } from '../dom.js';
import { formDialog, confirmDialog, notify } from '../dialogs.js';
import { timestamp } from '../format.js';

const GLOBAL = [
  ['manage_servers', 'Manage servers'],
  ['read_servers', 'Read servers'],
  ['manage_users', 'Manage users'],
  ['read_users', 'Read users'],
  ['manage_streams', 'Manage streams'],
  ['read_streams', 'Read streams'],
  ['manage_topics', 'Manage topics'],
  ['read_topics', 'Read topics'],
  ['poll_messages', 'Poll messages'],
  ['send_messages', 'Send messages'],
];

const PER_STREAM = [
  ['manage_stream', 'Manage stream'],
  ['read_stream', 'Read stream'],
  ['manage_topics', 'Manage topics'],
  ['read_topics', 'Read topics'],
  ['poll_messages', 'Poll'],
  ['send_messages', 'Send'],
];

const PER_TOPIC = [
  ['manage_topic', 'Manage topic'],
  ['read_topic', 'Read topic'],
  ['poll_messages', 'Poll'],
  ['send_messages', 'Send'],
];

function statusBadge(status) {
  return h('span', { class: ['badge', status === 'active' ? 'badge-ok' : 'badge-warn'] }, status === 'active' ? 'Active' : 'Inactive');
}

function globalChecks(global) {
  const boxes = GLOBAL.map(([key, label]) => [key, checkbox(label, global?.[key])]);
  return {
    el: h('fieldset', { class: 'checks' }, h('legend', null, 'Global permissions'), boxes.map(([, b]) => b.el)),
    read: () => Object.fromEntries(boxes.map(([key, b]) => [key, b.input.checked])),
  };
}

function createUserDialog(done) {
  const checks = globalChecks(null);
  formDialog({
    title: 'Create user',
    wide: true,
    fields: [
      h('div', { class: 'row' }, field('Username', h('input', { name: 'username', required: true, autocomplete: 'off' })), field('Password', h('input', { name: 'password', type: 'password', required: true, autocomplete: 'new-password' }))),
      field('Status', select([['active', 'Active'], ['inactive', 'Inactive']], 'active', { name: 'status' })),
      checks.el,
    ],
    submitLabel: 'Create',
    submit: (form) => {
      const data = new FormData(form);
      const global = checks.read();
      const any = Object.values(global).some(Boolean);
      return api('POST', '/users', {
        body: { username: String(data.get('username')).trim(), password: String(data.get('password')), status: data.get('status'), permissions: any ? { global, streams: null } : null },
      });
    },
    done: async (user) => {
      notify(`User ${user.username} created.`);
      await done();
    },
  });
}

export async function usersPage(view) {
  view.crumbs([['Users']]);
  const body = h('div', { class: 'page-body' });
  const load = async () => {
    try {
      const users = await api('GET', '/users');
      users.sort((a, b) => a.id - b.id);
      fill(
        body,
        section(
          `${users.length} ${users.length === 1 ? 'user' : 'users'}`,
          null,
          table(
            [
              { title: 'Username', cell: (u) => link(u.username, `/users/${u.id}`) },
              { title: 'ID', cell: (u) => u.id, numeric: true },
              { title: 'Status', cell: (u) => statusBadge(u.status) },
              { title: 'Created', cell: (u) => timestamp(u.created_at) },
            ],
            users,
            'No users.',
            'Users',
          ),
        ),
      );
    } catch (e) {
      fill(body, errorBox(e.message));
    }
  };
  fill(
    view.main,
    h('div', { class: 'page-head' }, h('div', null, h('h1', null, 'Users'), h('p', null, 'Who may sign in, and what each may do.')), button('Create user', () => createUserDialog(load), 'primary')),
    body,
  );
  await load();
  view.refresh(load);
}

function editUserDialog(user, done) {
  formDialog({
    title: `Edit user ${user.username}`,
    fields: [
      field('Username', h('input', { name: 'username', required: true, value: user.username, autocomplete: 'off' })),
      field('Status', select([['active', 'Active'], ['inactive', 'Inactive']], user.status, { name: 'status' })),
    ],
    submitLabel: 'Save',
    submit: (form) => {
      const data = new FormData(form);
      return api('PUT', `/users/${user.id}`, { body: { username: String(data.get('username')).trim(), status: data.get('status') } });
    },
    done: async () => {
      notify('User saved.');
      await done();
    },
  });
}

function passwordDialog(user) {
  formDialog({
    title: `Change the password of ${user.username}`,
    fields: [
      field('Current password', h('input', { name: 'current', type: 'password', required: true, autocomplete: 'current-password' })),
      field('New password', h('input', { name: 'new', type: 'password', required: true, autocomplete: 'new-password' })),
    ],
    submitLabel: 'Change password',
    submit: (form) => {
      const data = new FormData(form);
      return api('PUT', `/users/${user.id}/password`, { body: { current_password: String(data.get('current')), new_password: String(data.get('new')) } });
    },
    done: () => notify('Password changed.'),
  });
}

const flagsOf = (boxes) => Object.fromEntries(boxes.map(([key, b]) => [key, b.input.checked]));
const anyFlag = (flags) => Object.values(flags).some(Boolean);

/**
 * The user's permissions as an editable form: global flags, one row per
 * stream, one row per topic grant (with a picker to add one). `topicNames`
 * maps a stream id to a Map of its topic ids to names (streams whose
 * topics could not be read are absent). Returns `{ el, dirty() }`; the
 * page skips auto-refresh while there are unsaved changes.
 */
function permissionsEditor(user, streams, topicNames, load) {
  const permissions = user.permissions ?? { global: {}, streams: {} };
  const granted = permissions.streams ?? {};
  const global = globalChecks(permissions.global);
  let dirty = false;

  // Every listed stream, and any granted stream the list lacks (deleted,
  // or not readable), so saving never drops what is not shown.
  const streamName = new Map(streams.map((s) => [String(s.id), s.name]));
  for (const id of Object.keys(granted)) if (!streamName.has(id)) streamName.set(id, `Stream ${id}`);
  const streamIds = [...streamName.keys()].sort((a, b) => Number(a) - Number(b));
  const streamRows = streamIds.map((id) => {
    const current = granted[id];
    const name = streamName.get(id);
    return { id, name, boxes: PER_STREAM.map(([key, label]) => [key, checkbox(label, current?.[key], { 'aria-label': `${label} on ${name}` })]) };
  });

  const topicBody = h('tbody');
  const noTopics = h('p', { class: 'empty' }, 'No topic-level permissions.');
  const topicTable = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'perm-grid' },
      h('caption', { class: 'visually-hidden' }, 'Permissions per topic'),
      h(
        'thead',
        null,
        h('tr', null, h('th', { scope: 'col' }, 'Stream'), h('th', { scope: 'col' }, 'Topic'), PER_TOPIC.map(([, label]) => h('th', { scope: 'col' }, label)), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Remove'))),
      ),
      topicBody,
    ),
  );
  const topicRows = [];
  const showTopicRows = () => {
    topicTable.hidden = topicRows.length === 0;
    noTopics.hidden = topicRows.length > 0;
  };
  const topicName = (streamId, topicId) => topicNames.get(streamId)?.get(topicId) ?? `Topic ${topicId}`;
  const addTopicRow = (streamId, topicId, current) => {
    const where = `${topicName(streamId, topicId)} in ${streamName.get(streamId)}`;
    const row = { streamId, topicId, boxes: PER_TOPIC.map(([key, label]) => [key, checkbox(label, current?.[key], { 'aria-label': `${label} on ${where}` })]) };
    row.tr = h(
      'tr',
      null,
      h('td', { class: 'perm-name' }, streamName.get(streamId)),
      h('td', { class: 'perm-name' }, topicName(streamId, topicId)),
      row.boxes.map(([, b]) => h('td', null, b.input)),
      h(
        'td',
        null,
        button('Remove', () => {
          topicRows.splice(topicRows.indexOf(row), 1);
          row.tr.remove();
          dirty = true;
          showTopicRows();
          refreshTopicChoices();
        }, 'quiet', { 'aria-label': `Remove permissions on ${where}` }),
      ),
    );
    topicRows.push(row);
    topicBody.append(row.tr);
    showTopicRows();
    return row;
  };
  for (const streamId of streamIds) {
    const topics = granted[streamId]?.topics ?? {};
    for (const topicId of Object.keys(topics).sort((a, b) => Number(a) - Number(b))) addTopicRow(streamId, topicId, topics[topicId]);
  }

  // The picker: a stream, then one of its topics without a row yet.
  const streamPick = select([['', 'Choose a stream'], ...streams.map((s) => [String(s.id), s.name])], '', { name: 'grant-stream' });
  const topicPick = select([['', 'Choose a stream first']], '', { name: 'grant-topic', disabled: true });
  const addButton = button('Add topic permissions', () => {
    const streamId = streamPick.value;
    const topicId = topicPick.value;
    if (!streamId || !topicId) return;
    const row = addTopicRow(streamId, topicId, null);
    dirty = true;
    refreshTopicChoices();
    row.boxes[0][1].input.focus();
  }, null, { disabled: true });
  const pickError = h('div', { role: 'status', class: 'hint' });
  let pickSeq = 0;
  const refreshTopicChoices = () => {
    const streamId = streamPick.value;
    const known = topicNames.get(streamId);
    const taken = new Set(topicRows.filter((r) => r.streamId === streamId).map((r) => r.topicId));
    const free = known ? [...known].filter(([id]) => !taken.has(id)) : [];
    const placeholder = !streamId ? 'Choose a stream first' : known && free.length === 0 ? 'No other topics' : 'Choose a topic';
    fill(topicPick, h('option', { value: '' }, placeholder), free.map(([id, name]) => h('option', { value: id }, name)));
    topicPick.disabled = free.length === 0;
    addButton.disabled = true;
  };
  streamPick.addEventListener('change', async () => {
    pickSeq += 1;
    const seq = pickSeq;
    fill(pickError);
    const streamId = streamPick.value;
    if (streamId && !topicNames.has(streamId)) {
      try {
        const stream = await api('GET', `/streams/${streamId}`);
        topicNames.set(streamId, new Map([...stream.topics].sort((a, b) => a.id - b.id).map((t) => [String(t.id), t.name])));
      } catch (e) {
        if (seq === pickSeq) fill(pickError, e.message);
      }
    }
    if (seq === pickSeq) refreshTopicChoices();
  });
  topicPick.addEventListener('change', () => {
    addButton.disabled = !topicPick.value;
  });
  const picker = h(
    'div',
    { class: 'toolbar perm-add' },
    field('Stream', streamPick),
    field('Topic', topicPick),
    addButton,
  );

  const error = h('div', { class: 'alert alert-error', role: 'alert', hidden: true });
  const save = async () => {
    error.hidden = true;
    const streamsMap = {};
    for (const row of streamRows) {
      const flags = flagsOf(row.boxes);
      const topics = {};
      for (const t of topicRows.filter((r) => r.streamId === row.id)) {
        const topicFlags = flagsOf(t.boxes);
        if (anyFlag(topicFlags)) topics[t.topicId] = topicFlags;
      }
      const hasTopics = Object.keys(topics).length > 0;
      if (anyFlag(flags) || hasTopics) streamsMap[row.id] = { ...flags, topics: hasTopics ? topics : null };
    }
    try {
      await api('PUT', `/users/${user.id}/permissions`, { body: { permissions: { global: global.read(), streams: Object.keys(streamsMap).length ? streamsMap : null } } });
      notify('Permissions saved.');
      await load();
    } catch (e) {
      fill(error, e.message);
      error.hidden = false;
    }
  };
  const streamGrid = streamRows.length
    ? h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'perm-grid' },
          h('caption', { class: 'visually-hidden' }, 'Permissions per stream'),
          h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Stream'), PER_STREAM.map(([, label]) => h('th', { scope: 'col' }, label)))),
          h('tbody', null, streamRows.map((row) => h('tr', null, h('td', null, row.name), row.boxes.map(([, b]) => h('td', null, b.input))))),
        ),
      )
    : h('p', { class: 'empty' }, 'There are no streams to grant access to.');
  const el = section(
    'Permissions',
    [button('Save permissions', save, 'primary')],
    error,
    global.el,
    h('h3', { class: 'perm-level' }, 'Per stream'),
    streamGrid,
    h('h3', { class: 'perm-level' }, 'Per topic'),
    noTopics,
    topicTable,
    streams.length ? picker : null,
    pickError,
    h('p', { class: 'hint' }, 'A row with nothing ticked is dropped when the permissions are saved. A user may do what any level grants.'),
  );
  el.addEventListener('change', (event) => {
    // Choosing in the picker changes nothing until a row is added.
    if (event.target !== streamPick && event.target !== topicPick) dirty = true;
  });
  return { el, dirty: () => dirty };
}

/** Stream id -> Map(topic id -> name) for the streams the user has topic grants on. */
async function grantedTopicNames(user) {
  const ids = Object.entries(user.permissions?.streams ?? {})
    .filter(([, s]) => s?.topics && Object.keys(s.topics).length)
    .map(([id]) => id);
  const names = new Map();
  await Promise.all(
    ids.map(async (id) => {
      try {
        const stream = await api('GET', `/streams/${id}`);
        names.set(id, new Map(stream.topics.map((t) => [String(t.id), t.name])));
      } catch {
        // A deleted or unreadable stream: its topics are shown by id.
      }
    }),
  );
  return names;
}

export async function userPage(view, userId) {
  const head = h('div', { class: 'page-head' });
  const body = h('div', { class: 'page-body' });
  fill(view.main, head, body);
  let editor = null;
  const load = async () => {
    try {
      const [user, streams] = await Promise.all([api('GET', `/users/${seg(userId)}`), api('GET', '/streams').catch(() => [])]);
      streams.sort((a, b) => a.id - b.id);
      const topicNames = await grantedTopicNames(user);
      view.crumbs([['Users', '/users'], [user.username]]);
      const isRoot = user.id === 0;
      fill(
        head,
        h('div', null, h('h1', null, user.username), h('p', null, `User ${user.id}, created ${timestamp(user.created_at)} `, statusBadge(user.status))),
        h(
          'div',
          { class: 'actions' },
          button('Edit', () => editUserDialog(user, load), null, { 'aria-label': `Edit user ${user.username}` }),
          button('Change password', () => passwordDialog(user)),
          button('Delete', async () => {
            const sure = await confirmDialog({ title: `Delete user ${user.username}?`, message: 'The user can no longer sign in; their tokens stop working.', confirmLabel: 'Delete' });
            if (!sure) return;
            try {
              await api('DELETE', `/users/${user.id}`);
              notify(`User ${user.username} deleted.`);
              view.go('/users');
            } catch (e) {
              notify(e.message);
            }
          }, 'danger', { disabled: isRoot || user.id === session.get()?.userId, 'aria-label': `Delete user ${user.username}` }),
        ),
      );
      editor = isRoot ? null : permissionsEditor(user, streams, topicNames, load);
      fill(body, editor ? editor.el : section('Permissions', null, h('p', null, 'The root user may do everything; its permissions cannot be changed.')));
    } catch (e) {
      view.crumbs([['Users', '/users'], [`User ${userId}`]]);
      fill(body, errorBox(e.message));
    }
  };
  await load();
  // Auto-refresh would throw away ticks not yet saved.
  view.refresh(() => (editor?.dirty() ? undefined : load()));
}
