timeout: failed to run command ‘seamline’: No such file or directory
