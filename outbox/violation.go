package outbox

// EventSchemaViolation is written with a submission that enforce mode quarantined for
// breaking its form's field spec, in the same transaction (Submission.Events): the
// submission's reason says only schema_violation, and an operator releasing or erasing
// it needs to know which fields failed and why.
const EventSchemaViolation = "schema.violation"

// FieldError is one field that broke the field spec, with the message its visitor was
// shown. It names the field and the rule, never the value.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// SchemaViolationData is the data of an EventSchemaViolation event.
type SchemaViolationData struct {
	Form   string       `json:"form"`
	Errors []FieldError `json:"errors"`
}
