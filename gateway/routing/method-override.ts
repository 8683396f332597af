import type { IncomingHttpHeaders } from 'node:http';
import { TollgateError } from '../../common/errors.js';

/**
 * The headers and query parameter with which common server frameworks (Express's
 * method-override, ASP.NET, Jersey, Rack, Laravel) let a POST stand for another method.
 */
const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const;
const OVERRIDE_PARAMETER = /^_method$/i;

/**
 * A platform key's roles allow methods, and the gateway checks the method it sees: a call that
 * asks its upstream to act as another method (a POST that means DELETE) is refused, not passed on
 * for the upstream to honour. `query`: the request's, with its leading `?` (or empty).
 */
export function refuseMethodOverride(headers: IncomingHttpHeaders, query: string): void {
  const header = OVERRIDE_HEADERS.find((name) => headers[name] !== undefined);
  const parameter = [...new URLSearchParams(query).keys()].some((k) => OVERRIDE_PARAMETER.test(k));
  if (header === undefined && !parameter) return;
  throw new TollgateError(
    'method_override',
    `${header !== undefined ? `the ${header} header` : 'the _method parameter'} asks the resource to take this call as another method; the gateway checks a key's roles against the method it sees, so send the call with the method you mean (GET, PUT or POST)`,
    { field: header ?? '_method' },
  );
}
