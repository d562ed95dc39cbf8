'use strict';
// A postinstall step as projects have them: use the installed dependency, write a generated file.
const fs = require('fs');
const path = require('path');
const { greet } = require('greet-lib');
fs.mkdirSync(path.join(__dirname, '..', 'generated'), { recursive: true });
fs.writeFileSync(path.join(__dirname, '..', 'generated', 'greeting.txt'), greet('npm') + '\n');
console.log('postinstall: ' + greet('npm'));
