"""Reports of an output directory: ``run_report`` builds the document, one module per format
only lays it out, ``formats`` picks one."""
