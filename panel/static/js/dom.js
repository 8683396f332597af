// Small DOM helpers shared by the page and the dialogs.

/**
 * The element with this id, of this type. A missing element, or one of another kind, is a bug in
 * the page: it fails here, by name, rather than later as "cannot read properties of null".
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T; prototype: T }} [type] the element's class (default HTMLElement)
 * @returns {T}
 */
export function $(id, type) {
  const node = document.getElementById(id);
  const kind = type ?? HTMLElement;
  if (!(node instanceof kind)) throw new Error(`the page has no #${id} (${kind.name})`);
  return /** @type {T} */ (node);
}

/**
 * The first element under `root` matching `selector`, which the page must have.
 * @param {ParentNode} root
 * @param {string} selector
 * @returns {HTMLElement}
 */
export function find(root, selector) {
  const node = root.querySelector(selector);
  if (!(node instanceof HTMLElement)) throw new Error(`the page has no ${selector}`);
  return node;
}

/**
 * Creates an element with text content (never innerHTML: key names are user input).
 * @param {string} tag
 * @param {{ className?: string; text?: string; attrs?: Record<string, string> }} [options]
 * @param {Array<Node | string>} [children]
 * @returns {HTMLElement}
 */
export function el(tag, { className, text, attrs } = {}, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/**
 * Shows an error under a field and marks the control invalid; `null` clears it.
 * @param {HTMLElement | null} control
 * @param {HTMLElement} errorNode
 * @param {string | null} message
 */
export function setFieldError(control, errorNode, message) {
  errorNode.textContent = message ?? '';
  errorNode.hidden = !message;
  if (control) {
    if (message) control.setAttribute('aria-invalid', 'true');
    else control.removeAttribute('aria-invalid');
  }
}

/**
 * @param {HTMLElement} node the banner
 * @param {HTMLElement | null} textNode where its text goes (the banner itself when null)
 * @param {string | null} message `null` hides it
 */
export function showBanner(node, textNode, message) {
  (textNode ?? node).textContent = message ?? '';
  node.hidden = !message;
}

/**
 * Calls `fn` once the user has stopped typing for `ms`.
 * @param {() => void} fn
 * @param {number} ms
 * @returns {() => void}
 */
export function debounce(fn, ms) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

/**
 * A caught value's message (anything can be thrown; ours are Errors).
 * @param {unknown} error
 * @returns {string}
 */
export function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Gives each cell of a table body its column's heading as `data-label`: on a narrow screen the
 * rows stack as cards, each value under its heading (the stylesheet shows the label).
 * @param {HTMLElement} body
 */
export function labelCells(body) {
  const heads = [...(body.closest('table')?.querySelectorAll('thead th') ?? [])].map((th) =>
    (th.textContent ?? '').trim(),
  );
  for (const row of body.querySelectorAll(':scope > tr')) {
    [...row.children].forEach((cell, i) => cell.setAttribute('data-label', heads[i] ?? ''));
  }
}

/**
 * A row's action button; `label` names the action and its object for screen readers.
 * @param {string} text
 * @param {string} label
 * @param {() => void} action
 */
export function actionButton(text, label, action) {
  const button = el('button', {
    className: 'btn btn-icon btn-small',
    text,
    attrs: { type: 'button', 'aria-label': label },
  });
  button.addEventListener('click', action);
  return button;
}
