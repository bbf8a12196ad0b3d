"""Any Hugging Face encoder with a span head (`AutoModelForQuestionAnswering`)."""
