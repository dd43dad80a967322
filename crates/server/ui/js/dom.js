// DOM building for the console. Strings and numbers always become text
// nodes and attributes are set one by one, so no value from the server can
// ever be read as HTML (the console never assigns innerHTML).

let nextId = 0;

/** A fresh element id, for labels and aria references. */
export function uid(prefix = 'f') {
  nextId += 1;
  return `${prefix}${nextId}`;
}

/**
 * Creates `<tag>` with `props` (attributes; `on` for listeners; `class`,
 * `value`, `checked` and `text` as properties) and children (nodes, or
 * anything else as text).
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'on') {
      for (const [event, listener] of Object.entries(value)) el.addEventListener(event, listener);
    } else if (key === 'class') {
      el.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
    } else if (key === 'value') {
      el.value = String(value);
    } else if (key === 'checked') {
      el.checked = Boolean(value);
    } else if (key === 'text') {
      el.textContent = String(value);
    } else {
      if (key.toLowerCase().startsWith('on')) throw new Error(`inline handler ${key} refused`);
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled form control: `<label for>` names the input. */
export function field(label, input, hint) {
  if (!input.id) input.id = uid();
  const parts = [h('label', { for: input.id }, label), input];
  if (hint) {
    const hintId = uid('hint');
    input.setAttribute('aria-describedby', hintId);
    parts.push(h('small', { class: 'hint', id: hintId }, hint));
  }
  return h('div', { class: 'field' }, ...parts);
}

/** A checkbox with its label after it. */
export function checkbox(label, checked, props = {}) {
  const input = h('input', { type: 'checkbox', checked, ...props });
  return { input, el: h('label', { class: 'check' }, input, ' ', label) };
}

/** A `<select>` of `[value, label]` pairs. */
export function select(options, selected, props = {}) {
  return h(
    'select',
    props,
    options.map(([value, label]) =>
      h('option', { value, selected: String(value) === String(selected) }, label),
    ),
  );
}

/**
 * A table. `columns` are `{ title, cell(row), numeric }`; `empty` is the
 * sentence shown when there are no rows.
 */
export function table(columns, rows, empty, caption) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      null,
      caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
      h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col', class: c.numeric ? 'num' : null }, c.title)))),
      h(
        'tbody',
        null,
        rows.map((row) => h('tr', null, columns.map((c) => h('td', { class: c.numeric ? 'num' : null }, c.cell(row))))),
      ),
    ),
  );
}

/** A button; `kind` is `primary`, `danger` or `quiet`. */
export function button(label, onClick, kind, props = {}) {
  return h('button', { type: 'button', class: ['btn', kind && `btn-${kind}`], on: { click: onClick }, ...props }, label);
}

/** A link inside the console (hash routes). */
export function link(label, route, props = {}) {
  return h('a', { href: `#${route}`, ...props }, label);
}

/** A summary tile of a page header. */
export function stat(label, value) {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value));
}

/** An error box (role alert) with the message in words. */
export function errorBox(message) {
  return h('div', { class: 'alert alert-error', role: 'alert' }, message);
}

/** A page section with a heading and optional actions on its right. */
export function section(title, actions, ...content) {
  const headingId = uid('h');
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': headingId },
    h('div', { class: 'panel-head' }, h('h2', { id: headingId }, title), h('div', { class: 'actions' }, actions)),
    ...content,
  );
}
