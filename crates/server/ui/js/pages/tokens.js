// Personal access tokens of the signed-in user: list, create (the secret
// is shown once, right after creation), delete.

import { api, seg } from '../api.js';
import { h, fill, field, select, table, button, section, errorBox } from '../dom.js';
import { formDialog, confirmDialog, infoDialog, notify } from '../dialogs.js';
import { timestamp } from '../format.js';

const EXPIRIES = [
  ['0', 'Never'],
  ['3600000000', '1 hour'],
  ['86400000000', '1 day'],
  ['604800000000', '7 days'],
  ['2592000000000', '30 days'],
  ['31536000000000', '1 year'],
];

function createTokenDialog(done) {
  formDialog({
    title: 'Create access token',
    fields: [
      field('Name', h('input', { name: 'name', required: true, maxlength: 30, autocomplete: 'off' }), '3 to 30 characters.'),
      field('Expires', select(EXPIRIES, '0', { name: 'expiry' })),
    ],
    submitLabel: 'Create',
    submit: (form) => {
      const data = new FormData(form);
      return api('POST', '/personal-access-tokens', { body: { name: String(data.get('name')).trim(), expiry: Number(data.get('expiry')) } });
    },
    done: async (created) => {
      infoDialog(
        'Your new access token',
        h('p', null, 'Copy it now: it is shown only this once and cannot be read again.'),
        h('p', { class: 'secret', 'aria-label': 'New access token' }, created.token),
      );
      await done();
    },
  });
}

export async function tokensPage(view) {
  view.crumbs([['Access tokens']]);
  const body = h('div', { class: 'page-body' });
  const load = async () => {
    try {
      const tokens = await api('GET', '/personal-access-tokens');
      tokens.sort((a, b) => a.name.localeCompare(b.name));
      fill(
        body,
        section(
          'Your tokens',
          null,
          table(
            [
              { title: 'Name', cell: (t) => t.name },
              { title: 'Expires', cell: (t) => (t.expiry_at === null ? 'Never' : timestamp(t.expiry_at)) },
              {
                title: 'Actions',
                cell: (t) =>
                  button('Delete', async () => {
                    const sure = await confirmDialog({ title: `Delete token ${t.name}?`, message: 'Programs using it can no longer sign in with it.', confirmLabel: 'Delete' });
                    if (!sure) return;
                    try {
                      await api('DELETE', `/personal-access-tokens/${seg(t.name)}`);
                      notify(`Token ${t.name} deleted.`);
                    } catch (e) {
                      notify(e.message);
                    }
                    await load();
                  }, 'danger', { 'aria-label': `Delete token ${t.name}` }),
              },
            ],
            tokens,
            'You have no access tokens.',
            'Access tokens',
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
      h('div', null, h('h1', null, 'Access tokens'), h('p', null, 'Personal access tokens let programs act as you without your password.')),
      button('Create token', () => createTokenDialog(load), 'primary'),
    ),
    body,
  );
  await load();
  view.refresh(load);
}
