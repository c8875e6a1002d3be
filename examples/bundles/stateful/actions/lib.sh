# Helpers shared by the actions (sourced, not executed).

# random prints 24 hex characters from /dev/urandom.
random() {
  head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'
}

# key turns an id into a state key suffix (letters, digits, _).
key() {
  printf '%s' "$1" | tr -c 'A-Za-z0-9_' '_'
}
