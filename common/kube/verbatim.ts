/**
 * Text as a container receives it, whatever it holds. Kubernetes expands `$(NAME)` in a
 * container's command, args and env values from that container's environment, which includes
 * the Secrets it takes with envFrom: a storage URI or a settings file a tenant wrote, passed as an
 * argument beside the storage credentials, would otherwise carry those credentials' values out
 * (into a file the runtime serves, or a request path an object store logs). `$$` is a literal `$`.
 */
export const verbatim = (text: string): string => text.split('$').join('$$');
