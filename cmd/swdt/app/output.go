package app

// firstErr is err, else perr (an error of printing the outcome).
func firstErr(err, perr error) error {
	if err != nil {
		return err
	}
	return perr
}
