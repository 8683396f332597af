// Kept only for bench/inference.ts, which is being edited elsewhere: delete this file once that
// import points at common/routes/workflow-routes.js.
export { RouteTable } from '../../common/routes/workflow-routes.js';
