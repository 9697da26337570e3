package proto

import (
	"bytes"
	"strings"
)

// Redis's error replies, word for word. Commands reply with these texts so
// that clients which match on them (and the differential tests) see what
// redis-server sends.
const (
	ErrSyntax          = "ERR syntax error"
	ErrNotInteger      = "ERR value is not an integer or out of range"
	ErrNotFloat        = "ERR value is not a valid float"
	ErrOverflow        = "ERR increment or decrement would overflow"
	ErrBitOffset       = "ERR bit offset is not an integer or out of range"
	ErrBitValue        = "ERR bit is not an integer or out of range"
	ErrNoSuchKey       = "ERR no such key"
	ErrIndexRange      = "ERR index out of range"
	ErrDBIndex         = "ERR DB index is out of range"
	ErrInvalidDBIndex  = "ERR invalid DB index"
	ErrSameObject      = "ERR source and destination objects are the same"
	ErrStringTooLong   = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrWrongType       = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoAuth          = "NOAUTH Authentication required."
	ErrWrongPass       = "WRONGPASS invalid username-password pair or user is disabled."
	ErrNoPassword      = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrNoProto         = "NOPROTO unsupported protocol version"
	ErrNestedMulti     = "ERR MULTI calls can not be nested"
	ErrExecNoMulti     = "ERR EXEC without MULTI"
	ErrDiscardNoMulti  = "ERR DISCARD without MULTI"
	ErrNotInMulti      = "ERR Command not allowed inside a transaction"
	ErrExecAbort       = "EXECABORT Transaction discarded because of previous errors."
	ErrTimeout         = "ERR timeout is not an integer or out of range"
	ErrCursor          = "ERR invalid cursor"
	ErrPositive        = "ERR value is out of range, must be positive"
	ErrFailoverReplica = "ERR FAILOVER is not valid when server is a replica."
)

// ErrArity is the reply to a command called with the wrong number of
// arguments.
func ErrArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// ErrInvalidExpire is the reply to an expire time that is out of range.
func ErrInvalidExpire(name string) string {
	return "ERR invalid expire time in '" + name + "' command"
}

// ErrUnknownCommand is Redis's reply to a command it does not know: the
// name and the first arguments, each cut to 128 bytes in total, and with
// line breaks turned into spaces.
func ErrUnknownCommand(args [][]byte) string {
	b := make([]byte, 0, 128)
	for _, a := range args[1:] {
		if len(b) >= 128 {
			break
		}
		room := 128 - len(b)
		b = append(b, '\'')
		b = append(b, clip(a, room)...)
		b = append(b, '\'', ' ')
	}
	return errorText("ERR unknown command '" + clip(args[0], 128) + "', with args beginning with: " + string(b))
}

// ErrUnknownSubcommand is Redis's reply to an unknown subcommand of a
// container command such as CLIENT or CONFIG.
func ErrUnknownSubcommand(sub []byte, cmd string) string {
	return errorText("ERR unknown subcommand '" + clip(sub, 128) + "'. Try " + cmd + " HELP.")
}

// ErrSubcommandSyntax is Redis's reply to a subcommand of a command
// without a subcommand table (DEBUG) that is unknown or has the wrong
// number of arguments.
func ErrSubcommandSyntax(sub []byte, cmd string) string {
	return errorText("ERR unknown subcommand or wrong number of arguments for '" + clip(sub, 128) + "'. Try " + cmd + " HELP.")
}

// ErrPFDebugSubcommand is Redis's reply to a PFDEBUG subcommand it does
// not know.
func ErrPFDebugSubcommand(sub []byte) string {
	return errorText("ERR Unknown PFDEBUG subcommand '" + clip(sub, len(sub)) + "'")
}

// clip is b as C's "%.*s" prints it: at most n bytes, ending at a NUL.
func clip(b []byte, n int) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// errorText turns the line breaks in an error into spaces, as Redis does
// so that an error reply stays on one line.
func errorText(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
