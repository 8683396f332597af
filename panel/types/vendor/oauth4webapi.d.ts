// The panel imports oauth4webapi from `../vendor/oauth4webapi.js`, which the gateway serves from the
// installed package (gateway/http/panel-files.ts); this lets the type check see the package's own types.
export * from 'oauth4webapi';
