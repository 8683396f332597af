// Small DOM helpers shared by the page and the dialogs.
export const $ = (id) => document.getElementById(id);

/** Creates an element with text content (never innerHTML: key names are user input). */
export function el(tag, { className, text, attrs } = {}, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/** Shows an error under a field and marks the control invalid; `null` clears it. */
export function setFieldError(control, errorNode, message) {
  errorNode.textContent = message ?? '';
  errorNode.hidden = !message;
  if (control) {
    if (message) control.setAttribute('aria-invalid', 'true');
    else control.removeAttribute('aria-invalid');
  }
}

export function showBanner(node, textNode, message) {
  (textNode ?? node).textContent = message ?? '';
  node.hidden = !message;
}

/** Calls `fn` once the user has stopped typing for `ms`. */
export function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
