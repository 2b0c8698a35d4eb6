// HTTPServer module
