// Modal dialogs (the native <dialog>): forms that submit to the API and
// show the server's refusal in words inside the dialog, and confirmations
// for destructive actions. Also the short notices after a success.

import { h, fill, uid } from './dom.js';

let openCount = 0;

/** Whether a dialog is open (auto-refresh waits while one is). */
export function dialogOpen() {
  return openCount > 0;
}

function modal(title, content, { wide } = {}) {
  const titleId = uid('dlg');
  const dialog = h('dialog', { class: ['dialog', wide && 'dialog-wide'], 'aria-labelledby': titleId }, h('h2', { id: titleId }, title), content);
  document.body.append(dialog);
  openCount += 1;
  dialog.addEventListener('close', () => {
    openCount -= 1;
    dialog.remove();
  });
  dialog.showModal();
  return dialog;
}

/**
 * A form in a dialog. `fields` are nodes; `submit(form)` runs on submit
 * and may throw an Error whose message is shown; on success the dialog
 * closes and `done(result)` runs. Returns the dialog.
 */
export function formDialog({ title, fields, submitLabel, danger, wide, submit, done }) {
  const error = h('div', { class: 'alert alert-error', role: 'alert', hidden: true });
  const submitButton = h('button', { type: 'submit', class: ['btn', danger ? 'btn-danger' : 'btn-primary'] }, submitLabel);
  const form = h(
    'form',
    { class: 'dialog-form', novalidate: true },
    fields,
    error,
    h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'btn', on: { click: () => dialog.close() } }, 'Cancel'), submitButton),
  );
  const dialog = modal(title, form, { wide });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    submitButton.disabled = true;
    try {
      const result = await submit(form);
      dialog.close();
      if (done) await done(result);
    } catch (e) {
      fill(error, e.message || 'Something went wrong.');
      error.hidden = false;
    } finally {
      submitButton.disabled = false;
    }
  });
  const first = form.querySelector('input, select, textarea');
  if (first) first.focus();
  return dialog;
}

/** Asks to confirm; resolves true when confirmed. */
export function confirmDialog({ title, message, confirmLabel }) {
  return new Promise((resolve) => {
    let confirmed = false;
    const dialog = modal(
      title,
      h(
        'div',
        null,
        h('p', null, message),
        h(
          'div',
          { class: 'dialog-actions' },
          h('button', { type: 'button', class: 'btn', on: { click: () => dialog.close() } }, 'Cancel'),
          h('button', { type: 'button', class: 'btn btn-danger', on: { click: () => { confirmed = true; dialog.close(); } } }, confirmLabel),
        ),
      ),
    );
    dialog.addEventListener('close', () => resolve(confirmed));
  });
}

/** Shows content once in a dialog with a single "Done" button. */
export function infoDialog(title, ...content) {
  const dialog = modal(
    title,
    h('div', null, content, h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'btn btn-primary', on: { click: () => dialog.close() } }, 'Done'))),
  );
  return dialog;
}

/** A short notice in the page's status region. */
export function notify(message) {
  const region = document.getElementById('notices');
  if (!region) return;
  const note = h('div', { class: 'notice' }, message);
  region.append(note);
  setTimeout(() => note.remove(), 4000);
}
