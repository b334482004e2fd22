"""Server-rendered HTML pages: the status page, sign-in and the action links."""
