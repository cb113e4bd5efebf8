# bash completion for halfguard (installed as share/bash-completion/completions/halfguard).
#
# Subcommands and each subcommand's options are read from halfguard's own --help, once per shell, so
# the completion knows exactly the options of the halfguard it completes for. After an option that
# takes a value, the value: a file or folder, or one of the words the option accepts.

# The subcommands, from `halfguard --help`.
_halfguard_subcommands()
{
    "$1" --help 2>/dev/null | sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p'
}

# The options of subcommand $2 of halfguard $1, one a line: "--name" or "--name=" (takes a value),
# and "-x" or "-x=" for the short forms.
_halfguard_options()
{
    "$1" "$2" --help 2>/dev/null | sed -n 's/^  \(-[A-Za-z0-9?], \)\{0,1\}\(--[A-Za-z0-9_-]*\)\(=[^ ]*\)\{0,1\} .*/\1\2\3/p' |
        while IFS= read -r line; do
            local value=""
            case $line in *=*) value="=" ;; esac
            line=${line%%=*}
            case $line in
                -?,\ --*)
                    echo "${line#*, }$value"
                    echo "${line%%,*}$value"
                    ;;
                *) echo "$line$value" ;;
            esac
        done
}

_halfguard()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    local hg=${COMP_WORDS[0]}
    COMPREPLY=()

    # The subcommand: the first word after halfguard that is not an option.
    local sub="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            -*) ;;
            *) sub=${COMP_WORDS[i]}; break ;;
        esac
    done
    if [ -z "$sub" ]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$(_halfguard_subcommands "$hg")" -- "$cur")
        fi
        return 0
    fi
    if [ "$sub" = help ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_halfguard_subcommands "$hg")" -- "$cur")
        return 0
    fi

    # Options of this subcommand, read once per shell.
    local key="_HALFGUARD_OPTS_${sub//[^A-Za-z0-9]/_}"
    if [ -z "${!key+x}" ]; then
        printf -v "$key" '%s' "$(_halfguard_options "$hg" "$sub" | tr '\n' ' ')"
    fi
    local opts=${!key}

    # The value of an option: "--opt VALUE", or "--opt=VALUE", which bash splits at "=" into three
    # words (COMP_WORDBREAKS) and a caller may pass whole.
    local opt=$prev value=$cur joined=""
    if [ "$cur" = "=" ]; then
        value=""
    elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
        opt=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == --*=* ]]; then
        opt=${cur%%=*}
        value=${cur#*=}
        joined=1
    fi
    [[ " $opts " == *" $opt= "* ]] || opt=""
    if [ -n "$opt" ]; then
        local words=""
        case $opt in
            -f | --format)
                case $sub in
                    check) words="text json sarif" ;;
                    run) words="pb npy" ;;
                    *) words="text json" ;;
                esac
                ;;
            --accumulate) words="targets fp16" ;;
            --fail-on)
                words="error warning note overflow internal-overflow underflow non-finite-constant
                       division-by-zero precision-loss must-stay-fp32 unranged-input"
                ;;
        esac
        if [ -n "$words" ]; then
            mapfile -t COMPREPLY < <(compgen -W "$words" -- "$value")
        elif [[ $opt == -r || $opt == --input-range || $opt == -j || $opt == --jobs || $opt == -t ||
                $opt == --threads || $opt == --seed || $opt == --margin || $opt == --threshold ]]; then
            COMPREPLY=() # a value to type: nothing to offer
        else
            mapfile -t COMPREPLY < <(compgen -f -- "$value")
            compopt -o filenames 2>/dev/null
        fi
        if [ -n "$joined" ]; then # the word replaced is "--opt=VALUE" whole
            local k
            for k in "${!COMPREPLY[@]}"; do COMPREPLY[k]="$opt=${COMPREPLY[k]}"; done
        fi
        return 0
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(echo "$opts" | sed 's/=\( \|$\)/\1/g')" -- "$cur")
        return 0
    fi
    # Models and folders.
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    compopt -o filenames 2>/dev/null
    return 0
}

complete -F _halfguard halfguard
