"""One router per resource; web.main includes them."""
