// Users: the list, create, and one user's page to edit the username and
// status, global and per-stream permissions, change the password, delete.

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

function permissionsEditor(user, streams, load) {
  const permissions = user.permissions ?? { global: {}, streams: {} };
  const global = globalChecks(permissions.global);
  const rows = streams.map((stream) => {
    const current = permissions.streams?.[String(stream.id)];
    return { stream, current, boxes: PER_STREAM.map(([key, label]) => [key, checkbox(label, current?.[key], { 'aria-label': `${label} on ${stream.name}` })]) };
  });
  const error = h('div', { class: 'alert alert-error', role: 'alert', hidden: true });
  const save = async () => {
    error.hidden = true;
    const streamsMap = {};
    for (const row of rows) {
      const flags = Object.fromEntries(row.boxes.map(([key, b]) => [key, b.input.checked]));
      if (Object.values(flags).some(Boolean) || row.current?.topics) streamsMap[String(row.stream.id)] = { ...flags, topics: row.current?.topics ?? null };
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
  const grid = rows.length
    ? h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'perm-grid' },
          h('caption', { class: 'visually-hidden' }, 'Permissions per stream'),
          h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Stream'), PER_STREAM.map(([, label]) => h('th', { scope: 'col' }, label)))),
          h('tbody', null, rows.map((row) => h('tr', null, h('td', null, row.stream.name), row.boxes.map(([, b]) => h('td', null, b.input))))),
        ),
      )
    : h('p', { class: 'empty' }, 'There are no streams to grant access to.');
  return section('Permissions', [button('Save permissions', save, 'primary')], error, global.el, h('h3', null, 'Per stream'), grid, h('p', { class: 'hint' }, 'Topic-level grants are kept as they are.'));
}

export async function userPage(view, userId) {
  const head = h('div', { class: 'page-head' });
  const body = h('div', { class: 'page-body' });
  fill(view.main, head, body);
  const load = async () => {
    try {
      const [user, streams] = await Promise.all([api('GET', `/users/${seg(userId)}`), api('GET', '/streams').catch(() => [])]);
      streams.sort((a, b) => a.id - b.id);
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
      fill(body, isRoot ? section('Permissions', null, h('p', null, 'The root user may do everything; its permissions cannot be changed.')) : permissionsEditor(user, streams, load));
    } catch (e) {
      view.crumbs([['Users', '/users'], [`User ${userId}`]]);
      fill(body, errorBox(e.message));
    }
  };
  await load();
  view.refresh(load);
}
