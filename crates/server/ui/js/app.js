// The console's shell: sign-in, the navigation and top bar, hash routing
// to the pages, and auto-refresh of the page on view.

import { session, whenSignedOut, signInWithPassword, signInWithToken, signOut } from './api.js';
import { h, fill, field, link } from './dom.js';
import { dialogOpen } from './dialogs.js';
import { overviewPage } from './pages/overview.js';
import { streamsPage, streamPage } from './pages/streams.js';
import { topicPage } from './pages/topic.js';
import { groupPage } from './pages/groups.js';
import { messagesPage } from './pages/messages.js';
import { sendPage } from './pages/send.js';
import { usersPage, userPage } from './pages/users.js';
import { tokensPage } from './pages/tokens.js';

const REFRESH_KEY = 'iggy-console.refresh-seconds';
const REFRESH_CHOICES = [['0', 'Off'], ['5', 'Every 5 s'], ['10', 'Every 10 s'], ['30', 'Every 30 s'], ['60', 'Every minute']];

const ROUTES = [
  [/^overview$/, overviewPage, 'Overview'],
  [/^streams$/, streamsPage, 'Streams'],
  [/^streams\/([^/]+)$/, streamPage, 'Streams'],
  [/^streams\/([^/]+)\/topics\/([^/]+)$/, topicPage, 'Streams'],
  [/^streams\/([^/]+)\/topics\/([^/]+)\/messages$/, messagesPage, 'Streams'],
  [/^streams\/([^/]+)\/topics\/([^/]+)\/send$/, sendPage, 'Streams'],
  [/^streams\/([^/]+)\/topics\/([^/]+)\/groups\/([^/]+)$/, groupPage, 'Streams'],
  [/^users$/, usersPage, 'Users'],
  [/^users\/([^/]+)$/, userPage, 'Users'],
  [/^tokens$/, tokensPage, 'Access tokens'],
];

const root = document.getElementById('app');

// Counts refusals of the page's Content-Security-Policy (none are expected;
// the browser test reads the count).
document.addEventListener('securitypolicyviolation', () => {
  const seen = Number(document.documentElement.dataset.cspViolations ?? '0');
  document.documentElement.dataset.cspViolations = String(seen + 1);
});
let signInMessage = '';
let refreshTimer = null;
let currentRefresh = null;
let renderSeq = 0;

function route() {
  return decodeURIComponent(location.hash.replace(/^#\/?/, ''));
}

function signInView() {
  let mode = 'password';
  const error = h('div', { class: 'alert alert-error', role: 'alert', hidden: !signInMessage }, signInMessage);
  const body = h('div');
  const modes = h('div', { class: 'segmented', role: 'radiogroup', 'aria-label': 'Sign in with' });
  const renderForm = () => {
    const inputs =
      mode === 'password'
        ? [
            field('Username', h('input', { name: 'username', autocomplete: 'username', required: true })),
            field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true })),
          ]
        : [field('Personal access token', h('input', { name: 'token', type: 'password', autocomplete: 'off', required: true }))];
    const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign in');
    const form = h('form', { class: 'signin-form' }, inputs, submit);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      submit.disabled = true;
      error.hidden = true;
      try {
        const data = new FormData(form);
        if (mode === 'password') await signInWithPassword(String(data.get('username')), String(data.get('password')));
        else await signInWithToken(String(data.get('token')).trim());
        signInMessage = '';
        // A changed hash renders through its event; an unchanged one here.
        if (!route() || route() === 'signin') location.hash = '#/overview';
        else render();
      } catch (e) {
        fill(error, e.message);
        error.hidden = false;
      } finally {
        submit.disabled = false;
      }
    });
    fill(body, form);
    fill(
      modes,
      [['password', 'Password'], ['token', 'Access token']].map(([value, label]) =>
        h('button', { type: 'button', role: 'radio', 'aria-checked': String(mode === value), class: ['seg', mode === value && 'seg-on'], on: { click: () => { mode = value; renderForm(); } } }, label),
      ),
    );
    form.querySelector('input')?.focus();
  };
  renderForm();
  return h(
    'main',
    { class: 'signin' },
    h('div', { class: 'signin-card' }, h('div', { class: 'brand brand-large' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Iggy Console'), h('h1', null, 'Sign in'), modes, error, body),
  );
}

function refreshSelect() {
  const saved = localStorage.getItem(REFRESH_KEY) ?? '0';
  const selectEl = h('select', { id: 'auto-refresh' }, REFRESH_CHOICES.map(([value, label]) => h('option', { value, selected: value === saved }, label)));
  selectEl.addEventListener('change', () => {
    localStorage.setItem(REFRESH_KEY, selectEl.value);
    schedule();
  });
  return h('div', { class: 'refresh' }, h('label', { for: 'auto-refresh' }, 'Auto-refresh'), selectEl);
}

function schedule() {
  clearInterval(refreshTimer);
  const seconds = Number(localStorage.getItem(REFRESH_KEY) ?? '0');
  if (seconds > 0) {
    refreshTimer = setInterval(() => {
      if (!dialogOpen() && !document.hidden && currentRefresh) currentRefresh();
    }, seconds * 1000);
  }
}

function shell(section) {
  const who = session.get();
  const navLink = (label, target) => link(label, target, { class: ['nav-link', section === label && 'active'], 'aria-current': section === label ? 'page' : null });
  return h(
    'div',
    { class: 'shell' },
    h(
      'nav',
      { class: 'sidebar', 'aria-label': 'Main' },
      h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Iggy Console'),
      navLink('Overview', '/overview'),
      navLink('Streams', '/streams'),
      navLink('Users', '/users'),
      navLink('Access tokens', '/tokens'),
    ),
    h(
      'div',
      { class: 'content' },
      h(
        'header',
        { class: 'topbar' },
        h('nav', { class: 'crumbs', id: 'crumbs', 'aria-label': 'Breadcrumb' }),
        refreshSelect(),
        h('span', { class: 'who' }, who?.username ?? ''),
        h('button', { type: 'button', class: 'btn', on: { click: doSignOut } }, 'Sign out'),
      ),
      h('div', { id: 'notices', class: 'notices', role: 'status', 'aria-live': 'polite' }),
      h('main', { id: 'page', class: 'page' }),
    ),
  );
}

async function doSignOut() {
  await signOut();
  signInMessage = 'You have signed out.';
  location.hash = '#/signin';
  render();
}

function crumbs(list) {
  const el = document.getElementById('crumbs');
  if (!el) return;
  fill(
    el,
    h('ol', null, list.map(([label, target], i) => h('li', null, target && i < list.length - 1 ? link(label, target) : h('span', { 'aria-current': 'page' }, label)))),
  );
  document.title = `${list[list.length - 1][0]} · Iggy Console`;
}

async function render() {
  renderSeq += 1;
  const seq = renderSeq;
  currentRefresh = null;
  if (!session.get()) {
    document.title = 'Sign in · Iggy Console';
    fill(root, signInView());
    return;
  }
  const path = route();
  const match = ROUTES.map(([pattern, page, section]) => [path.match(pattern), page, section]).find(([m]) => m);
  if (!match) {
    location.hash = '#/overview';
    return;
  }
  const [found, page, section] = match;
  fill(root, shell(section));
  const main = document.getElementById('page');
  const view = {
    main,
    crumbs,
    refresh(fn) {
      if (seq === renderSeq) currentRefresh = fn;
    },
    go(target) {
      location.hash = `#${target}`;
    },
  };
  await page(view, ...found.slice(1));
  schedule();
}

whenSignedOut((message) => {
  signInMessage = message;
  render();
});
window.addEventListener('hashchange', render);
render();
