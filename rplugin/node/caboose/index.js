// Host entry. Run directly (jobstart with rpc = true) it serves Neovim over stdio; required by
// Neovim's classic node remote-plugin host it exports the plugin function instead.
'use strict';
const host = require('../../../dist/host/main.js');

if (require.main === module) {
  host.runStdio();
} else {
  module.exports = host.remotePlugin;
}
