'use strict';

function greet(name) {
  if (name === '') {
    return 'hello';
  }
  return `hello, ${name}`;
}

module.exports = { greet };
