# bash completion for tbhost(8): asks the binary itself
# (tbhost ... --generate-bash-completion, urfave/cli's protocol), so it
# always matches the installed command tree. Adapted from urfave/cli v2's
# autocomplete/bash_autocomplete without its eval of the command line.
_tbhost() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n "=:" || return
  else
    COMPREPLY=()
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur="${COMP_WORDS[COMP_CWORD]}"
  fi
  local -a req=("${words[@]:0:$cword}")
  if [[ "$cur" == -* ]]; then
    req+=("$cur")
  fi
  local opts
  opts=$("${req[@]}" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _tbhost tbhost
