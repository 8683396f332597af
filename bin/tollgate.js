#!/usr/bin/env node
// The CLI runs from the compiled output; `make build` (or any make target) produces it.
import '../dist/cli/main.js';
