package safetext

// CSVCell returns s as a spreadsheet may safely open it. A cell that starts with `=`,
// `+`, `-` or `@` is read as a formula by Excel, LibreOffice and Google Sheets, and a
// leading TAB or CR can hide such a start from a naive check, so those cells get a
// leading single quote, as OWASP's CSV injection guidance advises: spreadsheets show the
// rest as text. A cell that already starts with a single quote gets one too, so the
// mapping is reversible without ambiguity: removing the first character of every cell
// that starts with a single quote gives back the stored value exactly.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r', '\'':
		return "'" + s
	}
	return s
}

// CSVRecord neutralises every cell of rec in place (see CSVCell) and returns it.
func CSVRecord(rec []string) []string {
	for i, c := range rec {
		rec[i] = CSVCell(c)
	}
	return rec
}
