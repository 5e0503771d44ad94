package labcmd

import "errors"

var errNoPlanFormat = errors.New("lab rehearse needs the lvm plan format, which this build does not have yet")
