package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// durationValue is a duration flag that refuses, when it is parsed, a
// value that means nothing (a negative timeout, or zero where zero would
// only stand for the default): the user gets a usage error naming the flag
// and what it accepts instead of a silent default.
type durationValue struct {
	p *time.Duration
	// zeroOK accepts 0 (for example --settle 0: no settling); otherwise
	// the value must be more than 0.
	zeroOK bool
}

// durationFlag defines a duration flag on fl holding def until set; zeroOK
// says whether 0 is a meaningful value.
func durationFlag(fl *pflag.FlagSet, p *time.Duration, name string, def time.Duration, zeroOK bool, usage string) {
	*p = def
	fl.Var(&durationValue{p: p, zeroOK: zeroOK}, name, usage)
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration: write for example 30s, 2m or 1h30m")
	}
	if d < 0 || d == 0 && !v.zeroOK {
		return fmt.Errorf("must be %s (for example 30s or 2m)", v.valid())
	}
	*v.p = d
	return nil
}

// valid says which values the flag accepts.
func (v *durationValue) valid() string {
	if v.zeroOK {
		return "0 or more"
	}
	return "more than 0"
}

func (v *durationValue) String() string { return v.p.String() }
func (v *durationValue) Type() string   { return "duration" }
