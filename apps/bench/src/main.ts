#!/usr/bin/env node
import { main } from './dispatch.js';

process.exitCode = await main(process.argv.slice(2));
